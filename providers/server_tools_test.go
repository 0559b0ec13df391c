package providers

import "testing"

// TestWebSearchUses: a Messages request's web searches are bounded by its
// web search tools' max_uses, UnboundedWebSearches for one without; other
// tools add none.
func TestWebSearchUses(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`{"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`, 5},
		{`{"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, UnboundedWebSearches},
		{`{"tools":[{"type":"web_search_20250305","max_uses":2},{"type":"web_fetch_20250910"},{"name":"web_search","input_schema":{}}]}`, 2},
		{`{"tools":[{"type":"web_search_20250305","max_uses":-4}]}`, 0},
		{`{"messages":[]}`, 0},
		{`not json`, 0},
	} {
		if got := WebSearchUses([]byte(tc.body)); got != tc.want {
			t.Errorf("WebSearchUses(%s) = %d; want %d", tc.body, got, tc.want)
		}
	}
}

func FuzzWebSearchUses(f *testing.F) {
	f.Add([]byte(`{"tools":[{"type":"web_search_20250305","max_uses":5}]}`))
	f.Add([]byte(`{"tools":[{"type":"web_search"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if n := WebSearchUses(body); n < 0 {
			t.Fatalf("WebSearchUses(%q) = %d", body, n)
		}
	})
}
