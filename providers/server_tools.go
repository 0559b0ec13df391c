package providers

import "encoding/json"

// UnboundedWebSearches is how many searches a Messages web search tool
// without max_uses is reserved for: the provider sets no limit of its
// own, so a request's worst case assumes this many and its settlement
// charges those it ran.
const UnboundedWebSearches = 20

// WebSearchUses bounds the web searches a Messages request may have the
// provider run (each billed per search): the sum of its web search
// tools' max_uses, UnboundedWebSearches for one without; 0 when it has
// none. Called only for a body ServerTool found a server tool in, so
// the decode costs nothing to requests without one.
func WebSearchUses(body []byte) int64 {
	var r struct {
		Tools []struct {
			Type    string `json:"type"`
			MaxUses *int64 `json:"max_uses"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &r) != nil {
		return 0
	}
	var n int64
	for _, t := range r.Tools {
		if len(t.Type) < len("web_search") || t.Type[:len("web_search")] != "web_search" {
			continue
		}
		uses := int64(UnboundedWebSearches)
		if t.MaxUses != nil {
			uses = min(max(*t.MaxUses, 0), 1<<20)
		}
		n += uses
	}
	return n
}
