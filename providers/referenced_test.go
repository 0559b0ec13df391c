package providers

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestReferencesContent(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"messages":[{"role":"user","content":"hello"}]}`, false},
		{`{"messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, false},
		{`{"messages":[{"content":"see \"url\": \"https://x\" and \"file_id\""}]}`, false},
		{`{"messages":[{"content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"image_url","image_url":{ "url" : "http://x/a.png"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}`, true},
		{`{"input":[{"content":[{"type":"input_image","image_url":"https://x/a.png"}]}]}`, true},
		{`{"input":[{"content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`, true},
		{`{"contents":[{"parts":[{"fileData":{"mimeType":"video/mp4","fileUri":"gs://b/v.mp4"}}]}]}`, true},
		{`{"contents":[{"parts":[{"file_data":{"file_uri":"https://x"}}]}]}`, true},
		// The upstream decodes escapes and reads schemes in any case.
		{`{"messages":[{"content":[{"type":"image_url","image_url":{"url":"\u0068ttps://x/a.png"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"image_url","image_url":{"\u0075rl":"https://x/a.png"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"file","file":{"file\u005fid":"file-abc"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"file","file":{"file\u005Fid":"file-abc"}}]}]}`, true},
		{`{"messages":[{"content":[{"type":"image_url","image_url":{"url":"HTTPS://x/a.png"}}]}]}`, true},
		// Escapes encoders emit on their own are no reference: Go's
		// HTML-safe ones, Python's non-ASCII, an escaped backslash.
		{`{"messages":[{"content":"a \u003cb\u003e \u0026 \u0027 \u00e9t\u00e9 \u4f60 \"url\": \"https://x\""}]}`, false},
		{`{"messages":[{"content":"\\u0075rl: https://x"}]}`, false},
		{`{"messages":[{"content":"\u0022url\u0022: \u0022https://x"}]}`, false},
	} {
		if got := ReferencesContent([]byte(c.body)); got != c.want {
			t.Errorf("ReferencesContent(%s) = %v", c.body, got)
		}
	}
}

func TestServerTool(t *testing.T) {
	for body, want := range map[string]string{
		`{"tools":[{"type":"function","name":"f"}]}`:                                                                 "",
		`{"tools":[{"type":"function","function":{"name":"web_search"}}]}`:                                           "",
		`{"tools":[{"name":"web_fetch","input_schema":{}}],"messages":[{"content":"use \"type\": \"web_search\""}]}`: "",
		`{"tools":[{"type" : "web_fetch_20250910","name":"web_fetch"}]}`:                                             "web_fetch_20250910",
		`{"tools":[{"type":"web_search_20250305","name":"web_search"}]}`:                                             "web_search_20250305",
		`{"tools":[{"type":"web_search_preview"}]}`:                                                                  "web_search_preview",
		`{"web_search_options":{}}`:                                                                                  "web_search_options",
		`{"tools":[{"google_search" : {}}]}`:                                                                         "google_search",
		`{"tools":[{"googleSearch":{}}]}`:                                                                            "googleSearch",
		`{"tools":[{"type":"code_interpreter"}]}`:                                                                    "code_interpreter",
		`{"web\u005fsearch_options":{}}`:                                                                             "web_search_options",
		`{"tools":[{"type":"web\u005fsearch_preview"}]}`:                                                             "web_search_preview",
		`{"tools":[{"\u0074ype":"web_search_preview"}]}`:                                                             "web_search_preview",
		`{"messages":[{"content":"caf\u00e9 \u003cweb_search\u003e"}]}`:                                              "",
	} {
		if got := ServerTool([]byte(body)); got != want {
			t.Errorf("ServerTool(%s) = %q, want %q", body, got, want)
		}
	}
}

func FuzzReferencesContent(f *testing.F) {
	f.Add([]byte(`{"url": "https://x"}`))
	f.Add([]byte(`"web_search`))
	f.Add([]byte(`{"googleSearch`))
	f.Add([]byte(`{"type":"code_execution`))
	f.Add([]byte(`{"\u0075rl":"\u0068ttps://x"}`))
	f.Add([]byte(`{"type":"web\u005fsearch`))
	f.Add([]byte(`"\\u0075\u00`))
	f.Add([]byte(`\u006`))
	f.Add([]byte(`{"file_id":"x","tools":[{"type":"web\u005fsearch"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		refs := ReferencesContent(b)
		s := ServerTool(b)
		if len(s) > 40 {
			t.Errorf("ServerTool = %q", s)
		}
		// The estimate's one call answers as the two apart.
		if tool, referenced := PricedContent(b); tool != s || referenced != (s == "" && refs) {
			t.Errorf("PricedContent = %q, %v; ServerTool %q, ReferencesContent %v", tool, referenced, s, refs)
		}
	})
}

// BenchmarkPricedContent is the estimate's scans of a priced request
// without a server tool: a Claude Code request (77 kB) as in
// BenchmarkServerTool.
func BenchmarkPricedContent(b *testing.B) {
	body, err := os.ReadFile("testdata/claude_code_request.json")
	if err != nil {
		b.Fatal(err)
	}
	body = bytes.ReplaceAll(body, []byte("web_search"), []byte("web_lookup"))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if tool, _ := PricedContent(body); tool != "" {
			b.Fatal("found", tool)
		}
	}
}

func BenchmarkReferencesContent(b *testing.B) {
	body := []byte(`{"model":"paid","max_tokens":10,"messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if ReferencesContent(body) || ServerTool(body) != "" {
			b.Fatal("found")
		}
	}
}

// A Responses turn's stored history and referenced items are sent again:
// content given by reference in them counts as in the body.
func TestTurnHistoryReferencesContent(t *testing.T) {
	body := []byte(`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`)
	turn, err := ParseResponsesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Info().ReferencesContent(body) {
		t.Fatal("a plain turn references content")
	}
	turn.Prepend([]json.RawMessage{json.RawMessage(`{"role":"user","content":"hello"}`)})
	if turn.Info().ReferencesContent(body) {
		t.Fatal("a plain history references content")
	}
	image := json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}`)
	if err := turn.ResolveReferences(func(string) (json.RawMessage, bool) { return image, true }); err != nil {
		t.Fatal(err)
	}
	if !turn.Info().ReferencesContent(body) {
		t.Error("an item_reference naming an image by URL does not reference content")
	}
	turn, _ = ParseResponsesRequest([]byte(`{"model":"m","input":"again"}`))
	turn.Prepend([]json.RawMessage{json.RawMessage(`{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}`)})
	if !turn.Info().ReferencesContent(nil) {
		t.Error("a history with a file id does not reference content")
	}
}

// referencesContentByName is the scan referencesContent replaced, one
// pass per member name: what it finds, the two-pass scan must find too.
func referencesContentByName(body []byte) bool {
	for _, k := range [...]string{`"file_id"`, `"file_url"`, `"fileUri"`, `"file_uri"`} {
		if bytes.Contains(body, []byte(k)) {
			return true
		}
	}
	for _, k := range [...]string{`"url"`, `"image_url"`} {
		for rest := body; ; {
			i := bytes.Index(rest, []byte(k))
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			if v := valueAfterColon(rest); len(v) >= 5 && bytes.EqualFold(v[:5], []byte(`"http`)) {
				return true
			}
		}
	}
	return false
}

// FuzzReferencesContentTwoPass holds the two-pass scan to the scan by
// name: never a reference fewer (it may find one more only where names
// overlap, `"url"url"`, which no JSON body holds).
func FuzzReferencesContentTwoPass(f *testing.F) {
	for _, s := range []string{`{"url": "https://x"}`, `{"image_url":"HTTP://x"}`, `"file_id"`, `"fileUri"`,
		`{"file":{"file_uri" :"x"}}`, `"url"url": "http`, `"image_url"url" :"https`, `"file_url"`, `url": "https`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if referencesContentByName(b) && !referencesContent(b) {
			t.Errorf("referencesContent(%q) = false, the scan by name found a reference", b)
		}
	})
}

// BenchmarkReferencesContentChat is the scan on the bench's 2 KB chat
// request, which a priced model's every request pays.
func BenchmarkReferencesContentChat(b *testing.B) {
	body := []byte(`{"model":"priced","messages":[{"role":"system","content":"You are the platform team's assistant. ` +
		strings.Repeat("Answer briefly and precisely, with code where it helps. ", 28) +
		`"},{"role":"user","content":"How do I rotate the gateway's keys without downtime?"}],"max_tokens":512}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if ReferencesContent(body) {
			b.Fatal("found")
		}
	}
}
