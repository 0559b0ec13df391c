package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

const testAdminKey = "sk-ant-admin01-SECRET-do-not-leak"

var day1 = time.Date(2025, 9, 1, 0, 0, 0, 0, time.UTC)

func ledgerAdmin(t *testing.T) *Handler {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r := ledger.Record{Time: day1.Add(time.Hour), RequestID: "r1", KeyID: "alice", Workspace: "frontend",
		Alias: "claude", UpstreamModel: "claude-sonnet-4-5-20250929", Provider: "anthropic", ServiceTier: "standard",
		InputTokens: 4_200_000, OutputTokens: 10, Status: 200, Outcome: "ok"}
	p, _ := ledger.BuiltinPrices("anthropic", r.UpstreamModel)
	p.Apply(&r)
	if err := s.Insert(context.Background(), []ledger.Record{r}); err != nil {
		t.Fatal(err)
	}
	return &Handler{Store: s, Now: func() time.Time { return day1.Add(36 * time.Hour) }}
}

func serve(h http.Handler, id *policy.Identity, target string, hdr http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	if id != nil {
		req = req.WithContext(policy.WithIdentity(req.Context(), id))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type errBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeErr(t *testing.T, rec *httptest.ResponseRecorder) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body, err)
	}
	return e
}

func TestAdminMatch(t *testing.T) {
	a := &Handler{}
	for path, want := range map[string]bool{
		UsageReportPath: true,
		CostReportPath:  true,
		"/v1/organizations/usage_report/claude_code": true, // owned, answered 404 until served
		"/v1/organizations":                          true,
		"/v1/organizationsx":                         false,
		"/v1/messages":                               false,
	} {
		if got := a.Match(httptest.NewRequest(http.MethodGet, path+"?beta=true", nil)); got != want {
			t.Errorf("Match(%s) = %v", path, got)
		}
	}
}

// TestAdminUnknownPathIs404: an organization path the gateway does not
// serve used to fall through to Caddy's empty 200.
func TestAdminUnknownPathIs404(t *testing.T) {
	a := &Handler{}
	rec := serve(a, &policy.Identity{KeyID: "root", Role: policy.RoleAdmin}, "/v1/organizations/nosuch", nil)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"type":"not_found_error"`) ||
		!strings.Contains(rec.Body.String(), "GET /v1/organizations/nosuch") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

func TestAdminAuthorization(t *testing.T) {
	a := ledgerAdmin(t)
	user := &policy.Identity{KeyID: "bob", Role: policy.RoleUser}
	tests := []struct {
		name     string
		id       *policy.Identity
		status   int
		errType  string
		msgMatch string
	}{
		{"no identity", nil, 401, "authentication_error", "API key"},
	}
	for _, tt := range tests {
		rec := serve(a, tt.id, UsageReportPath+"?starting_at=2025-09-01T00:00:00Z", nil)
		if rec.Code != tt.status {
			t.Fatalf("%s: status %d", tt.name, rec.Code)
		}
		e := decodeErr(t, rec)
		if e.Type != "error" || e.Error.Type != tt.errType || !strings.Contains(e.Error.Message, tt.msgMatch) {
			t.Errorf("%s: body %s", tt.name, rec.Body)
		}
	}
	// A regular key reads the ledger's reports, cut to its own rows:
	// bob has none of alice's, whatever he asks for.
	rec := serve(a, user, UsageReportPath+"?starting_at=2025-09-01T00:00:00Z&group_by[]=api_key_id&api_key_ids[]=alice", nil)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), "alice") {
		t.Errorf("regular key: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(a, &policy.Identity{KeyID: "alice", Role: policy.RoleUser}, UsageReportPath+"?starting_at=2025-09-01T00:00:00Z&group_by[]=api_key_id", nil); !strings.Contains(rec.Body.String(), `"api_key_id":"alice"`) {
		t.Errorf("alice's own rows: %d %s", rec.Code, rec.Body)
	}
}

func TestAdminLedgerMode(t *testing.T) {
	a := ledgerAdmin(t)
	admin := &policy.Identity{KeyID: "root", Role: policy.RoleAdmin}

	rec := serve(a, admin, UsageReportPath+"?starting_at=2025-09-01T00:00:00Z&group_by[]=workspace_id&beta=true", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("usage: %d %s", rec.Code, rec.Body)
	}
	var u ledger.UsageReportPage
	if err := json.Unmarshal(rec.Body.Bytes(), &u); err != nil {
		t.Fatal(err)
	}
	// now is 09-02 12:00: two daily buckets, the first with alice's request.
	if len(u.Data) != 2 || len(u.Data[0].Results) != 1 || len(u.Data[1].Results) != 0 {
		t.Fatalf("usage body %s", rec.Body)
	}
	if r := u.Data[0].Results[0]; r.UncachedInputTokens != 4_200_000 || *r.WorkspaceID != "frontend" || r.Model != nil || r.Requests != 1 {
		t.Fatalf("usage result %+v", r)
	}

	rec = serve(a, admin, CostReportPath+"?starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z", nil)
	// 4.2M input at $3/MTok = 1260 cents, 10 output at $15/MTok = 0.015 cents.
	want := `{"data":[{"starting_at":"2025-09-01T00:00:00Z","ending_at":"2025-09-02T00:00:00Z","results":[` +
		`{"amount":"1260.015","currency":"USD","cost_type":null,"description":null,"model":null,"token_type":null,` +
		`"service_tier":null,"context_window":null,"inference_geo":null,"workspace_id":null}]}],` +
		`"has_more":false,"next_page":null}`
	if rec.Code != 200 || rec.Body.String() != want {
		t.Fatalf("cost: %d\n got %s\nwant %s", rec.Code, rec.Body, want)
	}
}

func TestAdminLedgerModeBadParameters(t *testing.T) {
	a := ledgerAdmin(t)
	admin := &policy.Identity{Role: policy.RoleAdmin}
	tests := []struct{ target, param string }{
		{UsageReportPath, "starting_at"},
		{UsageReportPath + "?starting_at=2025-09-01T00:00:00Z&bucket_width=2h", "bucket_width"},
		{UsageReportPath + "?starting_at=2025-09-01T00:00:00Z&limit=100", "limit"},
		{UsageReportPath + "?starting_at=2025-09-01T00:00:00Z&group_by[]=speed", "group_by[]"},
		{CostReportPath + "?starting_at=2025-09-01T00:00:00Z&bucket_width=1h", "bucket_width"},
		{CostReportPath + "?starting_at=2025-09-01T00:00:00Z&group_by[]=model", "group_by[]"},
		{CostReportPath + "?starting_at=2025-09-01T00:00:00Z&page=page_bogus", "page"},
	}
	for _, tt := range tests {
		rec := serve(a, admin, tt.target, nil)
		e := decodeErr(t, rec)
		if rec.Code != 400 || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, tt.param+":") {
			t.Errorf("%s: %d %s, want 400 naming %s", tt.target, rec.Code, rec.Body, tt.param)
		}
	}
}

// fakeAdminAPI speaks the provider's admin API wire format and records
// what the gateway sent.
type fakeAdminAPI struct {
	path, rawQuery string
	header         http.Header
}

func (f *fakeAdminAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.path, f.rawQuery, f.header = r.URL.Path, r.URL.RawQuery, r.Header.Clone()
	w.Header().Set("Request-Id", "req_011CFake")
	if r.Header.Get("x-api-key") != testAdminKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CFake"}`)
		return
	}
	if strings.Contains(r.URL.RawQuery, "limit=999") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"limit: too large"},"request_id":"req_011CFake"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Internal", "not relayed")
	_, _ = io.WriteString(w, `{"data":[],"has_more":false,"next_page":null}`)
}

func TestAdminProxyMode(t *testing.T) {
	fake := &fakeAdminAPI{}
	up := httptest.NewServer(fake)
	defer up.Close()
	a := &Handler{Upstream: up.URL + "/", AdminKey: testAdminKey, Client: up.Client()}
	admin := &policy.Identity{Role: policy.RoleAdmin}

	// Repeated, bracketed and oddly escaped parameters must reach the
	// provider exactly as the client wrote them.
	const rawQuery = "starting_at=2025-09-01T00%3A00%3A00Z&group_by[]=model&group_by%5B%5D=workspace_id&models[]=claude+x&beta=true"
	hdr := http.Header{
		"X-Api-Key":      {"gateway-admin-key"},
		"Authorization":  {"Bearer gateway-admin-key"},
		"Anthropic-Beta": {"fast-mode-2026-02-01", "other-beta"},
	}
	rec := serve(a, admin, UsageReportPath+"?"+rawQuery, hdr)
	if rec.Code != 200 || rec.Body.String() != `{"data":[],"has_more":false,"next_page":null}` {
		t.Fatalf("relay: %d %s", rec.Code, rec.Body)
	}
	if fake.path != UsageReportPath || fake.rawQuery != rawQuery {
		t.Errorf("forwarded %s?%s", fake.path, fake.rawQuery)
	}
	if got := fake.header.Get("X-Api-Key"); got != testAdminKey {
		t.Errorf("x-api-key = %q, want the admin key", got)
	}
	if got := fake.header.Get("Anthropic-Version"); got != "2023-06-01" {
		t.Errorf("anthropic-version = %q", got)
	}
	if got := fake.header.Values("Anthropic-Beta"); strings.Join(got, ",") != "fast-mode-2026-02-01,other-beta" {
		t.Errorf("anthropic-beta = %q", got)
	}
	if fake.header.Get("Authorization") != "" {
		t.Error("the gateway key was forwarded as Authorization")
	}
	if got := rec.Header().Get("Request-Id"); got != "req_011CFake" {
		t.Errorf("request-id = %q", got)
	}
	if rec.Header().Get("X-Internal") != "" {
		t.Error("unlisted upstream header relayed")
	}

	// Upstream errors come back unchanged, status and body.
	rec = serve(a, admin, CostReportPath+"?starting_at=2025-09-01T00:00:00Z&limit=999", nil)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"message":"limit: too large"`) ||
		fake.path != CostReportPath {
		t.Fatalf("error relay: %d %s", rec.Code, rec.Body)
	}
	// A wrong key upstream is relayed as the provider's 401, without the key.
	bad := &Handler{Upstream: up.URL, AdminKey: "sk-ant-admin01-WRONG", Client: up.Client()}
	rec = serve(bad, admin, CostReportPath+"?starting_at=2025-09-01T00:00:00Z", nil)
	if rec.Code != 401 || strings.Contains(rec.Body.String(), "WRONG") {
		t.Fatalf("401 relay: %d %s", rec.Code, rec.Body)
	}
	for _, r := range []*httptest.ResponseRecorder{rec} {
		for k, v := range r.Header() {
			if strings.Contains(strings.Join(v, " "), "sk-ant-admin") {
				t.Errorf("header %s leaks the admin key", k)
			}
		}
	}
	// Non-admins never reach the upstream.
	fake.path = ""
	rec = serve(a, &policy.Identity{Role: policy.RoleUser}, UsageReportPath+"?"+rawQuery, nil)
	if rec.Code != 403 || fake.path != "" {
		t.Fatalf("non-admin: %d, upstream saw %q", rec.Code, fake.path)
	}
}

// The body is relayed as it arrives, not after the upstream finishes.
func TestAdminProxyStreamsBody(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[`)
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, `],"has_more":false,"next_page":null}`)
	}))
	defer up.Close()
	a := &Handler{Upstream: up.URL, AdminKey: testAdminKey, Client: up.Client()}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{Role: policy.RoleAdmin})))
	}))
	defer gw.Close()
	resp, err := gw.Client().Get(gw.URL + CostReportPath + "?starting_at=2025-09-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len(`{"data":[`))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != `{"data":[` {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != `],"has_more":false,"next_page":null}` {
		t.Fatalf("rest %q", rest)
	}
}

func TestAdminProxyUnreachable(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	url := up.URL
	up.Close()
	a := &Handler{Upstream: url, AdminKey: testAdminKey, Client: &http.Client{}}
	rec := serve(a, &policy.Identity{Role: policy.RoleAdmin}, CostReportPath+"?starting_at=2025-09-01T00:00:00Z", nil)
	if rec.Code != 502 || strings.Contains(rec.Body.String(), testAdminKey) || decodeErr(t, rec).Type != "error" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestValidateAdminKey(t *testing.T) {
	if err := ValidateAdminKey(testAdminKey); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "sk-ant-api03-regular-SECRET", "sk-ant-adm1n-typo"} {
		err := ValidateAdminKey(key)
		if err == nil {
			t.Fatalf("%q accepted", key)
		}
		msg := err.Error()
		if (key != "" && strings.Contains(msg, key)) || strings.Contains(msg, "SECRET") ||
			!strings.Contains(msg, "organization admin key") || !strings.Contains(msg, "API keys") {
			t.Errorf("%q: message %q", key, msg)
		}
	}
}

// TestAdminReportQueryReadStrictly: Go's query parser drops a pair with a
// raw ';', so a filter silently vanished and the report widened to every
// key; a bad escape did the same.
func TestAdminReportQueryReadStrictly(t *testing.T) {
	a := ledgerAdmin(t)
	admin := &policy.Identity{KeyID: "root", Role: policy.RoleAdmin}
	for _, q := range []string{
		"starting_at=2025-09-01T00:00:00Z&api_key_ids[]=bob;alice",
		"starting_at=2025-09-01T00:00:00Z;api_key_ids[]=bob",
		"starting_at=2025-09-01T00:00:00Z&api_key_ids[]=%zz",
	} {
		for _, path := range []string{UsageReportPath, CostReportPath} {
			rec := serve(a, admin, path+"?"+q, nil)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"type":"invalid_request_error"`) {
				t.Errorf("%s?%s: %d %s, want a 400", path, q, rec.Code, rec.Body.String())
			}
		}
	}
	// Percent-encoded, the same characters are an ordinary value.
	rec := serve(a, admin, UsageReportPath+"?starting_at=2025-09-01T00:00:00Z&api_key_ids[]=bob%3Balice", nil)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "4200000") {
		t.Errorf("an encoded ';' filters for the key bob;alice: %d %s", rec.Code, rec.Body.String())
	}
}
