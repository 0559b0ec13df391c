package providers

import (
	"bytes"
	"os"
	"testing"
)

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

// BenchmarkServerTool is what the estimate's scan for a server tool
// costs a priced request: a Claude Code request (77 kB) whose history's
// search results are taken out, so the scan reads it all.
func BenchmarkServerTool(b *testing.B) {
	body, err := os.ReadFile("testdata/claude_code_request.json")
	if err != nil {
		b.Fatal(err)
	}
	body = bytes.ReplaceAll(body, []byte("web_search"), []byte("web_lookup"))
	if ServerTool(body) != "" {
		b.Fatal("the body still asks for a server tool")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ServerTool(body)
	}
}

// serverToolByName is ServerTool's definition as a scan of the body per
// name (as it was written before its one pass): the fuzzer holds the
// pass to it.
func serverToolByName(body []byte) string {
	types := []string{`"web_search`, `"web_fetch`, `"code_execution`, `"file_search"`, `"code_interpreter"`}
	members := []string{`"web_search_options"`, `"googleSearch`, `"google_search`, `"urlContext"`, `"url_context"`, `"codeExecution"`, `"code_execution"`}
	// The first place in the body that names one; at one place, a type
	// value before a member name.
	for i := range len(body) {
		for _, k := range types {
			if bytes.HasPrefix(body[i:], []byte(k)) && isTypeValue(body[:i]) {
				return quoted(body[i:])
			}
		}
		for _, k := range members {
			if bytes.HasPrefix(body[i:], []byte(k)) {
				name := quoted(body[i:])
				if v := skipSpace(body[min(i+len(name)+2, len(body)):]); len(v) > 0 && v[0] == ':' {
					return name
				}
			}
		}
	}
	return ""
}

func FuzzServerToolOnePass(f *testing.F) {
	f.Add([]byte(`{"tools":[{"type":"web_search_20250305","name":"web_search"}]}`))
	f.Add([]byte(`{"web_search_options":{},"messages":[]}`))
	f.Add([]byte(`{"tools":[{"googleSearch":{}},{"url_context" : {}}]}`))
	f.Add([]byte(`{"tools":[{"type":"function","name":"web_search"}]}`))
	f.Add([]byte(`{"type" : "code_interpreter"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, want := serverTool(body), serverToolByName(body); got != want {
			t.Fatalf("serverTool(%q) = %q; the scan per name finds %q", body, got, want)
		}
	})
}
