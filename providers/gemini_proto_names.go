package providers

// Google's JSON parser reads a request's members by their proto field
// names (generation_config, max_output_tokens) as well as by their JSON
// names (generationConfig, maxOutputTokens), as proto3's JSON mapping
// requires of parsers. A passed-through body is read by Google, so the
// gateway must read both spellings too, or a bound, a candidate count or a
// built-in tool written in snake_case would pass its estimate and checks
// unseen. encoding/json fills the twin fields (the …Snake ones); unify
// folds each into its JSON-named field, so the rest of the gateway reads
// one. The same field under both names is refused, as proto3's mapping
// requires ("the same field … more than once") and Google's protobuf
// parsers do: which one an upstream would read is not the gateway's to
// guess.

import "fmt"

// sameField refuses a field given under both of its names.
func sameField(path, json, proto string) error {
	return BadRequest(path+json, fmt.Sprintf("%s%s is given twice, also as %s; send it once", path, json, proto))
}

// twin moves a value sent under the proto name into the JSON-named field.
func twin[T comparable](json *T, proto *T, path, jsonName, protoName string) error {
	var zero T
	if *proto == zero {
		return nil
	}
	if *json != zero {
		return sameField(path, jsonName, protoName)
	}
	*json, *proto = *proto, zero
	return nil
}

// twinList is twin for lists and raw values.
func twinList[S ~[]E, E any](json *S, proto *S, path, jsonName, protoName string) error {
	if len(*proto) == 0 {
		return nil
	}
	if len(*json) != 0 {
		return sameField(path, jsonName, protoName)
	}
	*json, *proto = *proto, nil
	return nil
}

// unify folds every proto-named member of the request into its
// JSON-named field; an error names a field given under both.
func (q *geminiRequest) unify() error {
	if q.GeminiRequestProtoNames == nil {
		q.GeminiRequestProtoNames = &GeminiRequestProtoNames{}
	}
	err := firstErr(
		twin(&q.SystemInstruction, &q.SystemInstructionSnake, "", "systemInstruction", "system_instruction"),
		twin(&q.ToolConfig, &q.ToolConfigSnake, "", "toolConfig", "tool_config"),
		twin(&q.GenerationConfig, &q.GenerationConfigSnake, "", "generationConfig", "generation_config"),
		twinList(&q.SafetySettings, &q.SafetySettingsSnake, "", "safetySettings", "safety_settings"),
		twin(&q.CachedContent, &q.CachedContentSnake, "", "cachedContent", "cached_content"),
		twin(&q.ServiceTier, &q.ServiceTierSnake, "", "serviceTier", "service_tier"),
		twin(&q.GenerateContentRequest, &q.GenerateContentRequestSnake, "", "generateContentRequest", "generate_content_request"),
	)
	if err != nil {
		return err
	}
	q.GeminiRequestProtoNames = nil
	if q.GenerateContentRequest != nil {
		if err := q.GenerateContentRequest.unify(); err != nil {
			return err
		}
	}
	if q.SystemInstruction != nil {
		if err := q.SystemInstruction.unify("systemInstruction."); err != nil {
			return err
		}
	}
	for i := range q.Contents {
		if err := q.Contents[i].unify(fmt.Sprintf("contents[%d].", i)); err != nil {
			return err
		}
	}
	for i := range q.Tools {
		if err := q.Tools[i].unify(fmt.Sprintf("tools[%d].", i)); err != nil {
			return err
		}
	}
	if c := q.ToolConfig; c != nil {
		if err := twin(&c.FunctionCallingConfig, &c.FunctionCallingConfigSnake, "toolConfig.", "functionCallingConfig", "function_calling_config"); err != nil {
			return err
		}
		if f := c.FunctionCallingConfig; f != nil {
			if err := twinList(&f.AllowedFunctionNames, &f.AllowedFunctionNamesSnake, "toolConfig.functionCallingConfig.", "allowedFunctionNames", "allowed_function_names"); err != nil {
				return err
			}
		}
	}
	if g := q.GenerationConfig; g != nil {
		return g.unify()
	}
	return nil
}

func (g *geminiGenConfig) unify() error {
	const at = "generationConfig."
	if g.GeminiGenConfigProtoNames == nil {
		g.GeminiGenConfigProtoNames = &GeminiGenConfigProtoNames{}
	}
	err := firstErr(
		twin(&g.TopP, &g.TopPSnake, at, "topP", "top_p"),
		twin(&g.TopK, &g.TopKSnake, at, "topK", "top_k"),
		twin(&g.MaxOutputTokens, &g.MaxOutputTokensSnake, at, "maxOutputTokens", "max_output_tokens"),
		twinList(&g.StopSequences, &g.StopSequencesSnake, at, "stopSequences", "stop_sequences"),
		twin(&g.CandidateCount, &g.CandidateCountSnake, at, "candidateCount", "candidate_count"),
		twin(&g.PresencePenalty, &g.PresencePenaltySnake, at, "presencePenalty", "presence_penalty"),
		twin(&g.FrequencyPenalty, &g.FrequencyPenaltySnake, at, "frequencyPenalty", "frequency_penalty"),
		twin(&g.ResponseMimeType, &g.ResponseMimeTypeSnake, at, "responseMimeType", "response_mime_type"),
		twinList(&g.ResponseSchema, &g.ResponseSchemaSnake, at, "responseSchema", "response_schema"),
		twinList(&g.ResponseJSONSchema, &g.ResponseJSONSchemaSnake, at, "responseJsonSchema", "response_json_schema"),
		twin(&g.ThinkingConfig, &g.ThinkingConfigSnake, at, "thinkingConfig", "thinking_config"),
	)
	g.GeminiGenConfigProtoNames = nil
	if err != nil || g.ThinkingConfig == nil {
		return err
	}
	tc := g.ThinkingConfig
	return firstErr(
		twin(&tc.IncludeThoughts, &tc.IncludeThoughtsSnake, at+"thinkingConfig.", "includeThoughts", "include_thoughts"),
		twin(&tc.ThinkingBudget, &tc.ThinkingBudgetSnake, at+"thinkingConfig.", "thinkingBudget", "thinking_budget"),
		twin(&tc.ThinkingLevel, &tc.ThinkingLevelSnake, at+"thinkingConfig.", "thinkingLevel", "thinking_level"),
	)
}

func (c *geminiContent) unify(at string) error {
	for i := range c.Parts {
		if err := c.Parts[i].unify(fmt.Sprintf("%sparts[%d].", at, i)); err != nil {
			return err
		}
	}
	return nil
}

func (p *geminiPart) unify(at string) error {
	if p.GeminiPartProtoNames == nil {
		return p.unifyInner(at)
	}
	err := firstErr(
		twin(&p.ThoughtSignature, &p.ThoughtSignatureSnake, at, "thoughtSignature", "thought_signature"),
		twin(&p.InlineData, &p.InlineDataSnake, at, "inlineData", "inline_data"),
		twin(&p.FileData, &p.FileDataSnake, at, "fileData", "file_data"),
		twin(&p.FunctionCall, &p.FunctionCallSnake, at, "functionCall", "function_call"),
		twin(&p.FunctionResponse, &p.FunctionResponseSnake, at, "functionResponse", "function_response"),
		twinList(&p.ExecutableCode, &p.ExecutableCodeSnake, at, "executableCode", "executable_code"),
		twinList(&p.CodeExecutionResult, &p.CodeExecutionResultSnake, at, "codeExecutionResult", "code_execution_result"),
	)
	if err != nil {
		return err
	}
	p.GeminiPartProtoNames = nil
	return p.unifyInner(at)
}

// unifyInner unifies the members of a part's members.
func (p *geminiPart) unifyInner(at string) error {
	if b := p.InlineData; b != nil {
		if err := twin(&b.MimeType, &b.MimeTypeSnake, at+"inlineData.", "mimeType", "mime_type"); err != nil {
			return err
		}
	}
	if f := p.FileData; f != nil {
		if err := firstErr(
			twin(&f.MimeType, &f.MimeTypeSnake, at+"fileData.", "mimeType", "mime_type"),
			twin(&f.FileURI, &f.FileURISnake, at+"fileData.", "fileUri", "file_uri"),
		); err != nil {
			return err
		}
	}
	if r := p.FunctionResponse; r != nil {
		for i := range r.Parts {
			if err := r.Parts[i].unify(fmt.Sprintf("%sfunctionResponse.parts[%d].", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *geminiTool) unify(at string) error {
	err := firstErr(
		twinList(&t.FunctionDeclarations, &t.FunctionDeclarationsSnake, at, "functionDeclarations", "function_declarations"),
		twinList(&t.GoogleSearch, &t.GoogleSearchSnake, at, "googleSearch", "google_search"),
		twinList(&t.CodeExecution, &t.CodeExecutionSnake, at, "codeExecution", "code_execution"),
		twinList(&t.URLContext, &t.URLContextSnake, at, "urlContext", "url_context"),
		twinList(&t.GoogleMaps, &t.GoogleMapsSnake, at, "googleMaps", "google_maps"),
		twinList(&t.FileSearch, &t.FileSearchSnake, at, "fileSearch", "file_search"),
		twinList(&t.GoogleSearchRetrieval, &t.GoogleSearchRetrievalSnake, at, "googleSearchRetrieval", "google_search_retrieval"),
	)
	if err != nil {
		return err
	}
	for i := range t.FunctionDeclarations {
		d := &t.FunctionDeclarations[i]
		if err := twinList(&d.ParametersJSONSchema, &d.ParametersJSONSchemaSnake, fmt.Sprintf("%sfunctionDeclarations[%d].", at, i), "parametersJsonSchema", "parameters_json_schema"); err != nil {
			return err
		}
	}
	return nil
}

// firstErr is the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
