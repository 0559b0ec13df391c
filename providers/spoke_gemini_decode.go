package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// The fast path reads a Gemini request in one walk of the document (after
// one jsonfast.Valid) with jsonfast.Reader, as the Responses spoke does:
// encoding/json's reflection cost a third of a translated Gemini request's
// CPU. Anything it does not read exactly as encoding/json would (a
// duplicate or case-folded key, a wrong type) sends the caller to
// json.Unmarshal, whose results and errors it must equal
// (FuzzGeminiRequestFastPath). A proto field name (max_output_tokens for
// maxOutputTokens), which Google reads too, is one of those: the fast path
// reads only the JSON names, and encoding/json's twin fields take it.

// readGeminiRequest fills q from body; false: use encoding/json instead.
func readGeminiRequest(body []byte, q *geminiRequest) bool {
	r := jsonfast.NewReader(body)
	readGeminiRequestAt(&r, 0, q)
	return r.OK()
}

func readGeminiRequestAt(r *jsonfast.Reader, i int, q *geminiRequest) int {
	var mask uint32
	return r.Object(jsonfast.SkipSpace(r.Bytes(), i), func(k []byte, j int) int {
		switch string(k) {
		case "contents":
			r.Seen(&mask, 1<<0)
			return jsonfast.ListOf(r, j, &q.Contents, func(e int, v *geminiContent) int { return readGeminiContent(r, e, v) })
		case "systemInstruction":
			r.Seen(&mask, 1<<1)
			return jsonfast.OrNull(r, j, &q.SystemInstruction, func(e int, v *geminiContent) int { return readGeminiContent(r, e, v) })
		case "tools":
			r.Seen(&mask, 1<<2)
			return jsonfast.ListOf(r, j, &q.Tools, func(e int, v *geminiTool) int { return readGeminiTool(r, e, v) })
		case "toolConfig":
			r.Seen(&mask, 1<<3)
			return jsonfast.OrNull(r, j, &q.ToolConfig, func(e int, v *geminiToolConfig) int { return readGeminiToolConfig(r, e, v) })
		case "generationConfig":
			r.Seen(&mask, 1<<4)
			return jsonfast.OrNull(r, j, &q.GenerationConfig, func(e int, v *geminiGenConfig) int { return readGeminiGenConfig(r, e, v) })
		case "safetySettings":
			r.Seen(&mask, 1<<5)
			return r.Raw(j, &q.SafetySettings)
		case "cachedContent":
			r.Seen(&mask, 1<<6)
			return r.Str(j, &q.CachedContent)
		case "serviceTier":
			r.Seen(&mask, 1<<7)
			return r.Str(j, &q.ServiceTier)
		case "model":
			r.Seen(&mask, 1<<8)
			return r.Str(j, &q.Model)
		}
		// generateContentRequest (countTokens' wrapper) is rare enough
		// to leave to encoding/json.
		return r.Unknown(j, k, "contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
			"safetySettings", "cachedContent", "serviceTier", "model", "generateContentRequest",
			"system_instruction", "tool_config", "generation_config", "safety_settings", "cached_content", "service_tier",
			"generate_content_request")
	})
}

func readGeminiContent(r *jsonfast.Reader, i int, c *geminiContent) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "role":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &c.Role)
		case "parts":
			r.Seen(&mask, 1<<1)
			return jsonfast.ListOf(r, j, &c.Parts, func(e int, v *geminiPart) int { return readGeminiPart(r, e, v) })
		}
		return r.Unknown(j, k, "role", "parts")
	})
}

func readGeminiPart(r *jsonfast.Reader, i int, p *geminiPart) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "text":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &p.Text)
		case "thought":
			r.Seen(&mask, 1<<1)
			return r.Bool(j, &p.Thought)
		case "thoughtSignature":
			r.Seen(&mask, 1<<2)
			return r.Str(j, &p.ThoughtSignature)
		case "inlineData":
			r.Seen(&mask, 1<<3)
			return jsonfast.OrNull(r, j, &p.InlineData, func(e int, v *geminiBlob) int { return readGeminiBlob(r, e, v) })
		case "fileData":
			r.Seen(&mask, 1<<4)
			if r.IsNull(j) {
				p.FileData = nil
				return j + len("null")
			}
			p.FileData = &geminiFileData{}
			var m uint32
			return r.Object(j, func(k []byte, e int) int {
				switch string(k) {
				case "mimeType":
					r.Seen(&m, 1<<0)
					return r.Str(e, &p.FileData.MimeType)
				case "fileUri":
					r.Seen(&m, 1<<1)
					return r.Str(e, &p.FileData.FileURI)
				}
				return r.Unknown(e, k, "mimeType", "fileUri", "mime_type", "file_uri")
			})
		case "functionCall":
			r.Seen(&mask, 1<<5)
			return jsonfast.OrNull(r, j, &p.FunctionCall, func(e int, v *geminiFunctionCall) int { return readGeminiFunctionCall(r, e, v) })
		case "functionResponse":
			r.Seen(&mask, 1<<6)
			return jsonfast.OrNull(r, j, &p.FunctionResponse, func(e int, v *geminiFunctionResult) int { return readGeminiFunctionResult(r, e, v) })
		case "executableCode":
			r.Seen(&mask, 1<<7)
			return r.Raw(j, &p.ExecutableCode)
		case "codeExecutionResult":
			r.Seen(&mask, 1<<8)
			return r.Raw(j, &p.CodeExecutionResult)
		}
		return r.Unknown(j, k, "text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall",
			"functionResponse", "executableCode", "codeExecutionResult", "thought_signature", "inline_data", "file_data",
			"function_call", "function_response", "executable_code", "code_execution_result")
	})
}

func readGeminiBlob(r *jsonfast.Reader, i int, b *geminiBlob) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "mimeType":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &b.MimeType)
		case "data":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &b.Data)
		}
		return r.Unknown(j, k, "mimeType", "data", "mime_type")
	})
}

func readGeminiFunctionCall(r *jsonfast.Reader, i int, c *geminiFunctionCall) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "id":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &c.ID)
		case "name":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &c.Name)
		case "args":
			r.Seen(&mask, 1<<2)
			return r.Raw(j, &c.Args)
		}
		return r.Unknown(j, k, "id", "name", "args")
	})
}

func readGeminiFunctionResult(r *jsonfast.Reader, i int, c *geminiFunctionResult) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "id":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &c.ID)
		case "name":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &c.Name)
		case "response":
			r.Seen(&mask, 1<<2)
			return r.Raw(j, &c.Response)
		case "parts":
			r.Seen(&mask, 1<<3)
			return jsonfast.ListOf(r, j, &c.Parts, func(e int, v *geminiPart) int { return readGeminiPart(r, e, v) })
		}
		return r.Unknown(j, k, "id", "name", "response", "parts")
	})
}

func readGeminiTool(r *jsonfast.Reader, i int, t *geminiTool) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "functionDeclarations":
			r.Seen(&mask, 1<<0)
			return jsonfast.ListOf(r, j, &t.FunctionDeclarations, func(e int, v *geminiFunctionDecl) int { return readGeminiFunctionDecl(r, e, v) })
		case "googleSearch":
			r.Seen(&mask, 1<<1)
			return r.Raw(j, &t.GoogleSearch)
		case "codeExecution":
			r.Seen(&mask, 1<<2)
			return r.Raw(j, &t.CodeExecution)
		case "urlContext":
			r.Seen(&mask, 1<<3)
			return r.Raw(j, &t.URLContext)
		case "googleMaps":
			r.Seen(&mask, 1<<4)
			return r.Raw(j, &t.GoogleMaps)
		case "fileSearch":
			r.Seen(&mask, 1<<5)
			return r.Raw(j, &t.FileSearch)
		case "googleSearchRetrieval":
			r.Seen(&mask, 1<<6)
			return r.Raw(j, &t.GoogleSearchRetrieval)
		}
		return r.Unknown(j, k, "functionDeclarations", "googleSearch", "codeExecution", "urlContext", "googleMaps",
			"fileSearch", "googleSearchRetrieval", "function_declarations", "google_search", "code_execution", "url_context",
			"google_maps", "file_search", "google_search_retrieval")
	})
}

func readGeminiFunctionDecl(r *jsonfast.Reader, i int, d *geminiFunctionDecl) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "name":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &d.Name)
		case "description":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &d.Description)
		case "parameters":
			r.Seen(&mask, 1<<2)
			return r.Raw(j, &d.Parameters)
		case "parametersJsonSchema":
			r.Seen(&mask, 1<<3)
			return r.Raw(j, &d.ParametersJSONSchema)
		}
		return r.Unknown(j, k, "name", "description", "parameters", "parametersJsonSchema", "parameters_json_schema")
	})
}

func readGeminiToolConfig(r *jsonfast.Reader, i int, c *geminiToolConfig) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		if string(k) != "functionCallingConfig" {
			return r.Unknown(j, k, "functionCallingConfig", "function_calling_config")
		}
		r.Seen(&mask, 1<<0)
		if r.IsNull(j) {
			c.FunctionCallingConfig = nil
			return j + len("null")
		}
		f := &geminiFunctionCalling{}
		c.FunctionCallingConfig = f
		var m uint32
		return r.Object(j, func(k []byte, e int) int {
			switch string(k) {
			case "mode":
				r.Seen(&m, 1<<0)
				return r.Str(e, &f.Mode)
			case "allowedFunctionNames":
				r.Seen(&m, 1<<1)
				return jsonfast.ListOf(r, e, &f.AllowedFunctionNames, r.Str)
			}
			return r.Unknown(e, k, "mode", "allowedFunctionNames", "allowed_function_names")
		})
	})
}

func readGeminiGenConfig(r *jsonfast.Reader, i int, g *geminiGenConfig) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "temperature":
			r.Seen(&mask, 1<<0)
			return r.FloatPtr(j, &g.Temperature)
		case "topP":
			r.Seen(&mask, 1<<1)
			return r.FloatPtr(j, &g.TopP)
		case "topK":
			r.Seen(&mask, 1<<2)
			return r.FloatPtr(j, &g.TopK)
		case "maxOutputTokens":
			r.Seen(&mask, 1<<3)
			return r.IntPtr(j, &g.MaxOutputTokens)
		case "stopSequences":
			r.Seen(&mask, 1<<4)
			return jsonfast.ListOf(r, j, &g.StopSequences, r.Str)
		case "candidateCount":
			r.Seen(&mask, 1<<5)
			return r.IntPtr(j, &g.CandidateCount)
		case "presencePenalty":
			r.Seen(&mask, 1<<6)
			return r.FloatPtr(j, &g.PresencePenalty)
		case "frequencyPenalty":
			r.Seen(&mask, 1<<7)
			return r.FloatPtr(j, &g.FrequencyPenalty)
		case "seed":
			r.Seen(&mask, 1<<8)
			return r.IntPtr(j, &g.Seed)
		case "responseMimeType":
			r.Seen(&mask, 1<<9)
			return r.Str(j, &g.ResponseMimeType)
		case "responseSchema":
			r.Seen(&mask, 1<<10)
			return r.Raw(j, &g.ResponseSchema)
		case "responseJsonSchema":
			r.Seen(&mask, 1<<11)
			return r.Raw(j, &g.ResponseJSONSchema)
		case "thinkingConfig":
			r.Seen(&mask, 1<<12)
			if r.IsNull(j) {
				g.ThinkingConfig = nil
				return j + len("null")
			}
			tc := &geminiThinking{}
			g.ThinkingConfig = tc
			var m uint32
			return r.Object(j, func(k []byte, e int) int {
				switch string(k) {
				case "includeThoughts":
					r.Seen(&m, 1<<0)
					return r.Bool(e, &tc.IncludeThoughts)
				case "thinkingBudget":
					r.Seen(&m, 1<<1)
					return r.IntPtr(e, &tc.ThinkingBudget)
				case "thinkingLevel":
					r.Seen(&m, 1<<2)
					return r.Str(e, &tc.ThinkingLevel)
				}
				return r.Unknown(e, k, "includeThoughts", "thinkingBudget", "thinkingLevel", "include_thoughts", "thinking_budget", "thinking_level")
			})
		}
		return r.Unknown(j, k, "temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "candidateCount",
			"presencePenalty", "frequencyPenalty", "seed", "responseMimeType", "responseSchema", "responseJsonSchema",
			"thinkingConfig", "top_p", "top_k", "max_output_tokens", "stop_sequences", "candidate_count", "presence_penalty",
			"frequency_penalty", "response_mime_type", "response_schema", "response_json_schema", "thinking_config")
	})
}
