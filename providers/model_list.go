package providers

import "encoding/json"

// The models list (GET /v1/models) and one model (GET /v1/models/{alias})
// in OpenAI's and Anthropic's shapes. Gemini's, paged and with the
// methods each alias serves, is GeminiModels and GeminiModel.

// modelCreated is when every alias "was created": the API shapes require a
// time, and an alias has none of its own.
const (
	modelCreated     = 1735689600 // 2025-01-01T00:00:00Z
	modelCreatedText = "2025-01-01T00:00:00Z"
)

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func newOpenAIModel(alias string) openAIModel {
	return openAIModel{ID: alias, Object: "model", Created: modelCreated, OwnedBy: "modelgate"}
}

func newAnthropicModel(alias string) anthropicModel {
	return anthropicModel{Type: "model", ID: alias, DisplayName: alias, CreatedAt: modelCreatedText}
}

// ModelList is the models list of aliases in the shape a client of f
// reads: Anthropic's (with first_id and last_id) for Messages clients,
// OpenAI's for the rest.
func (f Format) ModelList(aliases []string) []byte {
	var body []byte
	if f == FormatAnthropic {
		list := struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID *string          `json:"first_id"`
			LastID  *string          `json:"last_id"`
		}{Data: []anthropicModel{}}
		for _, a := range aliases {
			list.Data = append(list.Data, newAnthropicModel(a))
		}
		if n := len(aliases); n > 0 {
			list.FirstID, list.LastID = &aliases[0], &aliases[n-1]
		}
		body, _ = json.Marshal(list)
		return body
	}
	list := struct {
		Object string        `json:"object"`
		Data   []openAIModel `json:"data"`
	}{Object: "list", Data: []openAIModel{}}
	for _, a := range aliases {
		list.Data = append(list.Data, newOpenAIModel(a))
	}
	body, _ = json.Marshal(list)
	return body
}

// Model is one alias's model object in the shape a client of f reads, as
// ModelList lists it.
func (f Format) Model(alias string) []byte {
	var body []byte
	if f == FormatAnthropic {
		body, _ = json.Marshal(newAnthropicModel(alias))
	} else {
		body, _ = json.Marshal(newOpenAIModel(alias))
	}
	return body
}
