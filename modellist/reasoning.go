package modellist

import "strings"

// ReasonsUnseen says whether model reasons unseen before it writes, by
// default: what said (model_info.supports_reasoning) when set, else a
// judgement by the upstream model's name (after any provider path):
// OpenAI's o-series, GPT-5 and Codex, Gemini 2.5 and later, DeepSeek's,
// Qwen's, Mistral's and xAI's reasoners, or a name with "thinking" or
// "reason". Judged once per entry, at parse.
func ReasonsUnseen(model string, said *bool) bool {
	if said != nil {
		return *said
	}
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if strings.Contains(name, "thinking") || strings.Contains(name, "reason") {
		return true
	}
	for _, f := range [...]string{"o1", "o3", "o4", "gpt-5", "codex", "gemini-2.5", "gemini-3", "deepseek-r1", "deepseek-reasoner", "qwq", "magistral", "grok-4", "grok-3-mini"} {
		if name == f || strings.HasPrefix(name, f+"-") || strings.HasPrefix(name, f+".") || strings.HasPrefix(name, f+"@") {
			return true
		}
	}
	return false
}
