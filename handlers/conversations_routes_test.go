package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// conversationGateway is a gateway whose conversations live in a SQLite
// ledger of the test's own.
func conversationGateway(t *testing.T) *Gateway {
	t.Helper()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rs := store.(ledger.ResponseStore)
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return rs }
	})
	return g
}

// send is get with a body.
func send(g *Gateway, id *policy.Identity, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req = req.WithContext(policy.WithIdentity(req.Context(), id))
	rec := httptest.NewRecorder()
	h, ok := g.Route(req)
	if !ok {
		rec.Code = -1
		return rec
	}
	h(rec, req)
	return rec
}

// TestConversationRoutes pins what the Conversations API answers for every
// method on every path under /v1/conversations: the routes, a 405 naming
// the methods a known path takes, a 404 for a path it does not have, all
// in OpenAI's error family (a 404 for an unknown path follows the caller's
// family, as every gateway path does).
func TestConversationRoutes(t *testing.T) {
	g := conversationGateway(t)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
		body         string // a substring of the answer
	}{
		{"GET", "/v1/conversations", 405, "POST", `"message":"method GET not allowed on /v1/conversations; use POST"`},
		{"HEAD", "/v1/conversations/", 405, "POST", ""},
		{"DELETE", "/v1/conversations/", 405, "POST", `use POST"`},
		{"GET", "/v1/conversations/conv_x", 404, "", `"message":"Conversation with id \"conv_x\" not found."`},
		{"HEAD", "/v1/conversations/conv_x", 405, "GET, POST, DELETE", ""},
		{"PUT", "/v1/conversations/conv_x", 405, "GET, POST, DELETE", `"message":"method PUT not allowed on /v1/conversations/conv_x; use GET, POST, DELETE"`},
		{"DELETE", "/v1/conversations/conv_x", 404, "", `"code":"not_found"`},
		{"POST", "/v1/conversations/conv_x", 404, "", `Conversation with id \"conv_x\" not found.`},
		{"GET", "/v1/conversations/conv_x/items", 404, "", `Conversation with id \"conv_x\" not found.`},
		{"HEAD", "/v1/conversations/conv_x/items", 405, "GET, POST", ""},
		{"DELETE", "/v1/conversations/conv_x/items", 405, "GET, POST", `use GET, POST"`},
		{"GET", "/v1/conversations/conv_x/items/msg_1", 404, "", `Conversation with id \"conv_x\" not found.`},
		{"POST", "/v1/conversations/conv_x/items/msg_1", 405, "GET, DELETE", `"message":"method POST not allowed on /v1/conversations/conv_x/items/msg_1; use GET, DELETE"`},
		{"HEAD", "/v1/conversations/conv_x/items/msg_1", 405, "GET, DELETE", ""},
		{"GET", "/v1/conversations/conv_x/", 404, "", `"code":"unknown_url"`},
		{"GET", "/v1/conversations/conv_x/items/", 404, "", `"code":"unknown_url"`},
		{"GET", "/v1/conversations/conv_x/nosuch", 404, "", `"message":"no endpoint for GET /v1/conversations/conv_x/nosuch on this gateway`},
		{"PUT", "/v1/conversations/conv_x/items/msg_1/more", 404, "", `"code":"unknown_url"`},
	} {
		rec := send(g, alice, tc.method, tc.path, "")
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s %s: %d Allow %q %s; want %d Allow %q with %s", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), rec.Body, tc.status, tc.allow, tc.body)
		}
		if tc.method != "HEAD" && !strings.Contains(rec.Body.String(), `"error":{"message"`) {
			t.Errorf("%s %s: %s, want OpenAI's error family", tc.method, tc.path, rec.Body)
		}
	}
	// An unknown path answers in the caller's family; a route's own
	// answers stay OpenAI's.
	if rec := send(g, alice, "GET", "/v1/conversations/conv_x/nosuch", "", "Anthropic-Version", "2023-06-01"); rec.Code != 404 || !strings.Contains(rec.Body.String(), `"type":"error"`) {
		t.Errorf("Anthropic caller, unknown path: %d %s", rec.Code, rec.Body)
	}
	if rec := send(g, alice, "PUT", "/v1/conversations/conv_x", "", "Anthropic-Version", "2023-06-01"); rec.Code != 405 || !strings.Contains(rec.Body.String(), `"error":{"message"`) {
		t.Errorf("Anthropic caller, 405: %d %s", rec.Code, rec.Body)
	}
}

// TestConversationRoutesRoundTrip walks each route once: create, read,
// update, list, add, read an item, delete it, delete the conversation,
// and another key sees none of it.
func TestConversationRoutesRoundTrip(t *testing.T) {
	g := conversationGateway(t)
	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		rec := send(g, alice, method, path, body)
		var out map[string]any
		if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
		}
		return out
	}
	conv := do("POST", "/v1/conversations/", `{"items":[{"role":"user","content":"hi"}],"metadata":{"a":"b"}}`, 200)
	id, _ := conv["id"].(string)
	if conv["object"] != "conversation" || !strings.HasPrefix(id, "conv_") {
		t.Fatalf("create: %v", conv)
	}
	base := "/v1/conversations/" + id
	if got := do("GET", base, "", 200); got["id"] != id || got["metadata"].(map[string]any)["a"] != "b" {
		t.Errorf("get: %v", got)
	}
	if got := do("POST", base, `{"metadata":{"c":"d"}}`, 200); got["metadata"].(map[string]any)["c"] != "d" {
		t.Errorf("update: %v", got)
	}
	added := do("POST", base+"/items", `{"items":[{"role":"assistant","content":"hello"}]}`, 200)
	data, _ := added["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("add: %v", added)
	}
	itemID, _ := data[0].(map[string]any)["id"].(string)
	if list := do("GET", base+"/items?order=asc", "", 200); len(list["data"].([]any)) != 2 || list["last_id"] != itemID {
		t.Errorf("list: %v", list)
	}
	do("POST", base+"/items", `{"items":[]}`, 400)
	if it := do("GET", base+"/items/"+itemID, "", 200); it["id"] != itemID || it["role"] != "assistant" {
		t.Errorf("item: %v", it)
	}
	if rec := send(g, &policy.Identity{KeyID: "carol", Role: policy.RoleUser}, "GET", base, ""); rec.Code != 404 {
		t.Errorf("another key's conversation: %d", rec.Code)
	}
	if got := do("DELETE", base+"/items/"+itemID, "", 200); got["id"] != id {
		t.Errorf("delete item: %v", got)
	}
	do("GET", base+"/items/"+itemID, "", 404)
	if got := do("DELETE", base, "", 200); got["deleted"] != true || got["object"] != "conversation.deleted" {
		t.Errorf("delete: %v", got)
	}
	do("GET", base, "", 404)
}

// TestConversationRoutesWithoutLedger: without a ledger database a route
// answers 501, after the path and method are checked.
func TestConversationRoutesWithoutLedger(t *testing.T) {
	g, _ := testGateway(t, echoModels, nil)
	if rec := send(g, alice, "GET", "/v1/conversations/conv_x", ""); rec.Code != http.StatusNotImplemented || !strings.Contains(rec.Body.String(), "ledger database") {
		t.Errorf("no ledger: %d %s", rec.Code, rec.Body)
	}
	if rec := send(g, alice, "GET", "/v1/conversations", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("no ledger, wrong method: %d", rec.Code)
	}
	if rec := send(g, alice, "GET", "/v1/conversations/conv_x/nosuch", ""); rec.Code != http.StatusNotFound {
		t.Errorf("no ledger, unknown path: %d", rec.Code)
	}
}

// TestConversationRoutesUncleanPaths: a path ServeMux would redirect to
// its cleaned form, or one whose escaped slash ServeMux would take into an
// id, names no conversation: it is the gateway's 404, never a redirect.
func TestConversationRoutesUncleanPaths(t *testing.T) {
	g := conversationGateway(t)
	for _, p := range []string{
		"/v1/conversations//items",
		"/v1/conversations/conv_x/items/.",
		"/v1/conversations/conv_x/../conv_y",
		"/v1/conversations/conv_x%2Fitems",
		"/v1/conversations/conv_x/items/msg_1%2F",
	} {
		rec := send(g, alice, "GET", p, "")
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"code":"unknown_url"`) {
			t.Errorf("GET %s: %d %s, want the gateway's 404", p, rec.Code, rec.Body)
		}
	}
}
