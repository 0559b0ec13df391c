package providers

import (
	"strings"
	"testing"
)

// D3: Google reads proto field names as well as JSON names; so does the
// gateway, for every field it reads, and a field under both is refused.
func TestGeminiReadsProtoFieldNames(t *testing.T) {
	const contents = `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	info, err := ParseGeminiRequest([]byte(`{`+contents+`,"generation_config":{"max_output_tokens":65536,"candidate_count":8,"thinking_config":{"include_thoughts":true,"thinking_budget":128}}}`), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	if info.OutputLimit() != 65536 || info.Choices() != 8 {
		t.Errorf("read %d × %d, want 65536 × 8", info.OutputLimit(), info.Choices())
	}
	if tc := info.gemini().req.GenerationConfig.ThinkingConfig; tc == nil || !tc.IncludeThoughts || tc.ThinkingBudget == nil || *tc.ThinkingBudget != 128 {
		t.Errorf("thinking_config not read: %+v", tc)
	}

	for name, body := range map[string]string{
		"bound":          `{` + contents + `,"generationConfig":{"maxOutputTokens":10,"max_output_tokens":65536}}`,
		"config":         `{` + contents + `,"generationConfig":{"maxOutputTokens":10},"generation_config":{"maxOutputTokens":65536}}`,
		"candidates":     `{` + contents + `,"generation_config":{"candidateCount":1,"candidate_count":8}}`,
		"inline data":    `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA"},"inline_data":{"mime_type":"image/png","data":"AA"}}]}]}`,
		"built-in tools": `{` + contents + `,"tools":[{"googleSearch":{},"google_search":{}}]}`,
	} {
		if _, err := ParseGeminiRequest([]byte(body), "m", false); err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%s under both names: %v, want given twice", name, err)
		}
	}
	for name, body := range map[string]string{
		"cached_content": `{` + contents + `,"cached_content":"cachedContents/x"}`,
		"google_search":  `{` + contents + `,"tools":[{"google_search":{}}]}`,
		"code_execution": `{` + contents + `,"tools":[{"code_execution":{}}]}`,
		"thinking":       `{` + contents + `,"generation_config":{"thinking_config":{"thinking_budget":1,"thinking_level":"LOW"}}}`,
	} {
		if _, err := ParseGeminiRequest([]byte(body), "m", false); err == nil {
			t.Errorf("%s was not refused", name)
		}
	}

	// A translation reads them too.
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"},{"inline_data":{"mime_type":"image/png","data":"AA"}}]}],` +
		`"system_instruction":{"parts":[{"text":"be brief"}]},"tools":[{"function_declarations":[{"name":"f","parameters_json_schema":{"type":"object"}}]}],` +
		`"tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["f"]}},"generation_config":{"stop_sequences":["END"],"top_p":0.5,"response_mime_type":"application/json"}}`
	info, err = ParseGeminiRequest([]byte(body), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	chat, err := info.gemini().toChat("m", false, chatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"be brief"`, `data:image/png;base64,AA`, `"name":"f"`, `"END"`, `"top_p":0.5`, `"json_object"`} {
		if !strings.Contains(string(chat), want) {
			t.Errorf("translation lacks %s: %s", want, chat)
		}
	}
}
