package providers

import "github.com/modelgate/modelgate/providers/internal/jsonfast"

// The fast path reads a Gemini request in one walk of the document (after
// one jsonfast.Valid) with the chat reader's fastReader, as the Responses
// spoke does: encoding/json's reflection cost a third of a translated
// Gemini request's CPU. Anything it does not read exactly as
// encoding/json would (a duplicate or case-folded key, a wrong type)
// sends the caller to json.Unmarshal, whose results and errors it must
// equal (FuzzGeminiRequestFastPath).

// readGeminiRequest fills q from body; false: use encoding/json instead.
func readGeminiRequest(body []byte, q *geminiRequest) bool {
	r := newFastReader(body)
	r.geminiRequest(0, q)
	return r.ok
}

func (r *fastReader) geminiRequest(i int, q *geminiRequest) int {
	var mask uint32
	return r.object(jsonfast.SkipSpace(r.b, i), func(k []byte, j int) int {
		switch string(k) {
		case "contents":
			r.seen(&mask, 1<<0)
			return listOf(r, j, &q.Contents, r.geminiContent)
		case "systemInstruction":
			r.seen(&mask, 1<<1)
			return orNull(r, j, &q.SystemInstruction, r.geminiContent)
		case "tools":
			r.seen(&mask, 1<<2)
			return listOf(r, j, &q.Tools, r.geminiTool)
		case "toolConfig":
			r.seen(&mask, 1<<3)
			return orNull(r, j, &q.ToolConfig, r.geminiToolConfig)
		case "generationConfig":
			r.seen(&mask, 1<<4)
			return orNull(r, j, &q.GenerationConfig, r.geminiGenConfig)
		case "safetySettings":
			r.seen(&mask, 1<<5)
			return r.raw(j, &q.SafetySettings)
		case "cachedContent":
			r.seen(&mask, 1<<6)
			return r.str(j, &q.CachedContent)
		case "serviceTier":
			r.seen(&mask, 1<<7)
			return r.str(j, &q.ServiceTier)
		case "model":
			r.seen(&mask, 1<<8)
			return r.str(j, &q.Model)
		}
		// generateContentRequest (countTokens' wrapper) is rare enough
		// to leave to encoding/json.
		return r.unknown(j, k, "contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
			"safetySettings", "cachedContent", "serviceTier", "model", "generateContentRequest")
	})
}

func (r *fastReader) geminiContent(i int, c *geminiContent) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "role":
			r.seen(&mask, 1<<0)
			return r.str(j, &c.Role)
		case "parts":
			r.seen(&mask, 1<<1)
			return listOf(r, j, &c.Parts, r.geminiPart)
		}
		return r.unknown(j, k, "role", "parts")
	})
}

func (r *fastReader) geminiPart(i int, p *geminiPart) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "text":
			r.seen(&mask, 1<<0)
			return r.str(j, &p.Text)
		case "thought":
			r.seen(&mask, 1<<1)
			return r.boolean(j, &p.Thought)
		case "thoughtSignature":
			r.seen(&mask, 1<<2)
			return r.str(j, &p.ThoughtSignature)
		case "inlineData":
			r.seen(&mask, 1<<3)
			return orNull(r, j, &p.InlineData, r.geminiBlob)
		case "fileData":
			r.seen(&mask, 1<<4)
			if r.isNull(j) {
				p.FileData = nil
				return j + len("null")
			}
			p.FileData = &geminiFileData{}
			var m uint32
			return r.object(j, func(k []byte, e int) int {
				switch string(k) {
				case "mimeType":
					r.seen(&m, 1<<0)
					return r.str(e, &p.FileData.MimeType)
				case "fileUri":
					r.seen(&m, 1<<1)
					return r.str(e, &p.FileData.FileURI)
				}
				return r.unknown(e, k, "mimeType", "fileUri")
			})
		case "functionCall":
			r.seen(&mask, 1<<5)
			return orNull(r, j, &p.FunctionCall, r.geminiFunctionCall)
		case "functionResponse":
			r.seen(&mask, 1<<6)
			return orNull(r, j, &p.FunctionResponse, r.geminiFunctionResult)
		case "executableCode":
			r.seen(&mask, 1<<7)
			return r.raw(j, &p.ExecutableCode)
		case "codeExecutionResult":
			r.seen(&mask, 1<<8)
			return r.raw(j, &p.CodeExecutionResult)
		}
		return r.unknown(j, k, "text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall",
			"functionResponse", "executableCode", "codeExecutionResult")
	})
}

func (r *fastReader) geminiBlob(i int, b *geminiBlob) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "mimeType":
			r.seen(&mask, 1<<0)
			return r.str(j, &b.MimeType)
		case "data":
			r.seen(&mask, 1<<1)
			return r.str(j, &b.Data)
		}
		return r.unknown(j, k, "mimeType", "data")
	})
}

func (r *fastReader) geminiFunctionCall(i int, c *geminiFunctionCall) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "id":
			r.seen(&mask, 1<<0)
			return r.str(j, &c.ID)
		case "name":
			r.seen(&mask, 1<<1)
			return r.str(j, &c.Name)
		case "args":
			r.seen(&mask, 1<<2)
			return r.raw(j, &c.Args)
		}
		return r.unknown(j, k, "id", "name", "args")
	})
}

func (r *fastReader) geminiFunctionResult(i int, c *geminiFunctionResult) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "id":
			r.seen(&mask, 1<<0)
			return r.str(j, &c.ID)
		case "name":
			r.seen(&mask, 1<<1)
			return r.str(j, &c.Name)
		case "response":
			r.seen(&mask, 1<<2)
			return r.raw(j, &c.Response)
		case "parts":
			r.seen(&mask, 1<<3)
			return listOf(r, j, &c.Parts, r.geminiPart)
		}
		return r.unknown(j, k, "id", "name", "response", "parts")
	})
}

func (r *fastReader) geminiTool(i int, t *geminiTool) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "functionDeclarations":
			r.seen(&mask, 1<<0)
			return listOf(r, j, &t.FunctionDeclarations, r.geminiFunctionDecl)
		case "googleSearch":
			r.seen(&mask, 1<<1)
			return r.raw(j, &t.GoogleSearch)
		case "codeExecution":
			r.seen(&mask, 1<<2)
			return r.raw(j, &t.CodeExecution)
		case "urlContext":
			r.seen(&mask, 1<<3)
			return r.raw(j, &t.URLContext)
		case "googleMaps":
			r.seen(&mask, 1<<4)
			return r.raw(j, &t.GoogleMaps)
		case "fileSearch":
			r.seen(&mask, 1<<5)
			return r.raw(j, &t.FileSearch)
		case "googleSearchRetrieval":
			r.seen(&mask, 1<<6)
			return r.raw(j, &t.GoogleSearchRetrieval)
		}
		return r.unknown(j, k, "functionDeclarations", "googleSearch", "codeExecution", "urlContext", "googleMaps",
			"fileSearch", "googleSearchRetrieval")
	})
}

func (r *fastReader) geminiFunctionDecl(i int, d *geminiFunctionDecl) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "name":
			r.seen(&mask, 1<<0)
			return r.str(j, &d.Name)
		case "description":
			r.seen(&mask, 1<<1)
			return r.str(j, &d.Description)
		case "parameters":
			r.seen(&mask, 1<<2)
			return r.raw(j, &d.Parameters)
		case "parametersJsonSchema":
			r.seen(&mask, 1<<3)
			return r.raw(j, &d.ParametersJSONSchema)
		}
		return r.unknown(j, k, "name", "description", "parameters", "parametersJsonSchema")
	})
}

func (r *fastReader) geminiToolConfig(i int, c *geminiToolConfig) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		if string(k) != "functionCallingConfig" {
			return r.unknown(j, k, "functionCallingConfig")
		}
		r.seen(&mask, 1<<0)
		if r.isNull(j) {
			c.FunctionCallingConfig = nil
			return j + len("null")
		}
		f := &struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		}{}
		c.FunctionCallingConfig = f
		var m uint32
		return r.object(j, func(k []byte, e int) int {
			switch string(k) {
			case "mode":
				r.seen(&m, 1<<0)
				return r.str(e, &f.Mode)
			case "allowedFunctionNames":
				r.seen(&m, 1<<1)
				return listOf(r, e, &f.AllowedFunctionNames, r.str)
			}
			return r.unknown(e, k, "mode", "allowedFunctionNames")
		})
	})
}

func (r *fastReader) geminiGenConfig(i int, g *geminiGenConfig) int {
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "temperature":
			r.seen(&mask, 1<<0)
			return r.floatPtr(j, &g.Temperature)
		case "topP":
			r.seen(&mask, 1<<1)
			return r.floatPtr(j, &g.TopP)
		case "topK":
			r.seen(&mask, 1<<2)
			return r.floatPtr(j, &g.TopK)
		case "maxOutputTokens":
			r.seen(&mask, 1<<3)
			return r.intPtr(j, &g.MaxOutputTokens)
		case "stopSequences":
			r.seen(&mask, 1<<4)
			return listOf(r, j, &g.StopSequences, r.str)
		case "candidateCount":
			r.seen(&mask, 1<<5)
			return r.intPtr(j, &g.CandidateCount)
		case "presencePenalty":
			r.seen(&mask, 1<<6)
			return r.floatPtr(j, &g.PresencePenalty)
		case "frequencyPenalty":
			r.seen(&mask, 1<<7)
			return r.floatPtr(j, &g.FrequencyPenalty)
		case "seed":
			r.seen(&mask, 1<<8)
			return r.intPtr(j, &g.Seed)
		case "responseMimeType":
			r.seen(&mask, 1<<9)
			return r.str(j, &g.ResponseMimeType)
		case "responseSchema":
			r.seen(&mask, 1<<10)
			return r.raw(j, &g.ResponseSchema)
		case "responseJsonSchema":
			r.seen(&mask, 1<<11)
			return r.raw(j, &g.ResponseJSONSchema)
		case "thinkingConfig":
			r.seen(&mask, 1<<12)
			if r.isNull(j) {
				g.ThinkingConfig = nil
				return j + len("null")
			}
			tc := &struct {
				IncludeThoughts bool   `json:"includeThoughts"`
				ThinkingBudget  *int64 `json:"thinkingBudget"`
				ThinkingLevel   string `json:"thinkingLevel"`
			}{}
			g.ThinkingConfig = tc
			var m uint32
			return r.object(j, func(k []byte, e int) int {
				switch string(k) {
				case "includeThoughts":
					r.seen(&m, 1<<0)
					return r.boolean(e, &tc.IncludeThoughts)
				case "thinkingBudget":
					r.seen(&m, 1<<1)
					return r.intPtr(e, &tc.ThinkingBudget)
				case "thinkingLevel":
					r.seen(&m, 1<<2)
					return r.str(e, &tc.ThinkingLevel)
				}
				return r.unknown(e, k, "includeThoughts", "thinkingBudget", "thinkingLevel")
			})
		}
		return r.unknown(j, k, "temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "candidateCount",
			"presencePenalty", "frequencyPenalty", "seed", "responseMimeType", "responseSchema", "responseJsonSchema",
			"thinkingConfig")
	})
}

// orNull reads the value at i into a new *dst with read; null sets *dst
// nil, as encoding/json does for a pointer.
func orNull[T any](r *fastReader, i int, dst **T, read func(int, *T) int) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	*dst = new(T)
	return read(i, *dst)
}

// listOf reads the array at i into a new *dst, each element with read;
// null sets *dst nil, as encoding/json does for a slice (a null element
// stays zero, which r.str does for a string and r.object refuses).
func listOf[T any](r *fastReader, i int, dst *[]T, read func(int, *T) int) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	*dst = []T{}
	return r.array(i, func(e int) int {
		var zero T
		*dst = append(*dst, zero)
		return read(e, &(*dst)[len(*dst)-1])
	})
}
