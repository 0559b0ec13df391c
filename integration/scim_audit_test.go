package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/ledger"
)

const scimToken = "scim-integration-token-5d1e0c2a9f"

// scimFixture is a recorded provisioning sequence (scim/testdata).
type scimFixture struct {
	Steps []struct {
		Name   string            `json:"name"`
		Method string            `json:"method"`
		Path   string            `json:"path"`
		Token  string            `json:"token"`
		Body   json.RawMessage   `json:"body"`
		Status int               `json:"status"`
		Expect map[string]any    `json:"expect"`
		Save   map[string]string `json:"save"`
	} `json:"steps"`
}

func jsonAt(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// scimCall makes one SCIM request to g with the token.
func scimCall(t *testing.T, g *gateway, method, path, token, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, g.base+path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// replayFixture replays one IdP's documented request sequence against
// the running gateway, checking status codes and the answered attributes.
func replayFixture(t *testing.T, g *gateway, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var fx scimFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	subst := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		return s
	}
	for _, st := range fx.Steps {
		tok := scimToken
		if st.Token != "" {
			tok = st.Token
		}
		status, b := scimCall(t, g, st.Method, subst(st.Path), tok, subst(string(st.Body)))
		if status != st.Status {
			t.Fatalf("%s: %s %s: %d, want %d: %s", st.Name, st.Method, st.Path, status, st.Status, b)
		}
		var got any
		if len(b) > 0 && json.Unmarshal(b, &got) != nil {
			t.Fatalf("%s: not JSON: %s", st.Name, b)
		}
		for path, want := range st.Expect {
			if s, ok := want.(string); ok {
				want = subst(s)
			}
			v, ok := jsonAt(got, path)
			if w, isList := want.([]any); isList && len(w) == 0 && (v == nil || reflect.DeepEqual(v, []any{})) {
				continue
			}
			if !ok || !reflect.DeepEqual(v, want) {
				t.Errorf("%s: %s = %v, want %v", st.Name, path, v, want)
			}
		}
		for k, path := range st.Save {
			v, _ := jsonAt(got, path)
			vars[k], _ = v.(string)
		}
	}
}

// TestSCIMAndAuditLogAcrossInstances: two gateways on one PostgreSQL.
// Okta's and Entra ID's documented provisioning sequences replay against
// the binary; a person's key (minted as OIDC sign-in mints them) stops
// working on the other instance within 2 s of their deactivation; and the
// audit log, read on the other instance, has the key, SCIM and config
// reload entries, filtered, paged and exported as JSON lines, with no
// secret in it.
func TestSCIMAndAuditLogAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.pricedModels(), ledgerLine: "ledger postgres {env.DATABASE_URL}",
		authExtra: "scim_token {env.SCIM_TOKEN}", env: []string{"DATABASE_URL=" + dsn.String(), "SCIM_TOKEN=" + scimToken}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)

	for _, f := range []string{"okta.json", "entra.json"} {
		t.Run(f, func(t *testing.T) { replayFixture(t, a, filepath.Join("..", "scim", "testdata", f)) })
	}
	if status, out := scimCall(t, b, "GET", "/scim/v2/Users", "", ""); status != 401 || !strings.Contains(string(out), "urn:ietf:params:scim:api:messages:2.0:Error") {
		t.Errorf("no token: %d %s", status, out)
	}

	// A person provisioned on a; their key minted as OIDC sign-in does.
	status, out := scimCall(t, a, "POST", "/scim/v2/Users", scimToken,
		`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"dev@example.com","externalId":"00u-dev","active":true}`)
	var user struct {
		ID string `json:"id"`
	}
	if status != 201 || json.Unmarshal(out, &user) != nil {
		t.Fatalf("create user: %d %s", status, out)
	}
	store, err := ledger.OpenPostgres(context.Background(), dsn.String())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	secret := "mg-person-key-for-dev-0123456789abcdef"
	sum := sha256.Sum256([]byte(secret))
	now := time.Now().UTC()
	if err := store.(ledger.ControlStore).PutKey(context.Background(), ledger.ControlKey{ID: "apikey_dev", Name: "dev@example.com",
		SecretHash: hex.EncodeToString(sum[:]), Hint: "mg-p...cdef", Status: "active", CreatedAt: now, UpdatedAt: now,
		CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: "dev@example.com", Email: "dev@example.com", Subject: "00u-dev"}}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b, secret, "oa", 200)
	if status, out := scimCall(t, a, "PATCH", "/scim/v2/Users/"+user.ID, scimToken,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`); status != 200 {
		t.Fatalf("deactivate: %d %s", status, out)
	}
	took := waitStatus(t, b, secret, "oa", 401)
	t.Logf("a deactivation on one instance refused the person's key on the other after %v", took)

	// Admin actions on a, read back on b.
	k := createKey(t, a, `{"name":"ci-audit","rpm":60}`)
	if status, _, out := a.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"status":"inactive"}`); status != 200 {
		t.Fatalf("revoke: %d %s", status, out)
	}
	type entry struct {
		ID     string            `json:"id"`
		Actor  string            `json:"actor"`
		Action string            `json:"action"`
		Target string            `json:"target"`
		Source string            `json:"source"`
		Fields map[string]string `json:"fields"`
	}
	type page struct {
		Data    []entry `json:"data"`
		HasMore bool    `json:"has_more"`
		LastID  string  `json:"last_id"`
	}
	get := func(q url.Values) page {
		t.Helper()
		status, _, out := b.do(t, "GET", "/v1/organizations/audit_log?"+q.Encode(), adminKey, "")
		var p page
		if status != 200 || json.Unmarshal(out, &p) != nil {
			t.Fatalf("audit log %s: %d %s", q.Encode(), status, out)
		}
		return p
	}
	created := get(url.Values{"action": {"key.create"}, "target": {k.ID}})
	if len(created.Data) != 1 || created.Data[0].Actor != "admin" || created.Data[0].Fields["name"] != "ci-audit" ||
		created.Data[0].Fields["rpm"] != "60" || created.Data[0].Source != "127.0.0.1" {
		t.Errorf("key.create entries: %+v", created.Data)
	}
	revoked := get(url.Values{"action": {"key.revoke"}, "actor": {"admin"}})
	if len(revoked.Data) != 1 || revoked.Data[0].Fields["status"] != "inactive" {
		t.Errorf("key.revoke entries: %+v", revoked.Data)
	}
	deact := get(url.Values{"action": {"scim.user.deactivate"}, "target": {"dev@example.com"}})
	if len(deact.Data) != 1 || deact.Data[0].Fields["revoked_keys"] != "1" || deact.Data[0].Actor != "scim" {
		t.Errorf("scim.user.deactivate entries: %+v", deact.Data)
	}
	if reloads := get(url.Values{"action": {"config.reload"}}); len(reloads.Data) != 2 {
		t.Errorf("config.reload entries (one per instance): %+v", reloads.Data)
	}
	if st, _, out := b.do(t, "GET", "/v1/organizations/audit_log?starting_at=yesterday", adminKey, ""); st != 400 || !strings.Contains(string(out), "starting_at") {
		t.Errorf("bad starting_at: %d %s", st, out)
	}
	if st, _, _ := b.do(t, "GET", "/v1/organizations/audit_log", aliceKey, ""); st != 403 {
		t.Errorf("a member key read the audit log: %d", st)
	}
	// Paging: pages of 5 walk every entry once, newest first.
	all := get(url.Values{"limit": {"1000"}})
	seen := map[string]bool{}
	for q := (url.Values{"limit": {"5"}}); ; {
		p := get(q)
		for _, e := range p.Data {
			if seen[e.ID] {
				t.Fatalf("entry %s on two pages", e.ID)
			}
			seen[e.ID] = true
		}
		if !p.HasMore {
			break
		}
		q.Set("after_id", p.LastID)
	}
	if len(seen) != len(all.Data) || len(all.Data) < 20 {
		t.Errorf("paged %d entries, the log has %d", len(seen), len(all.Data))
	}
	scimActions := map[string]bool{}
	for _, e := range all.Data {
		if strings.HasPrefix(e.Action, "scim.") {
			scimActions[e.Action] = true
		}
	}
	for _, want := range []string{"scim.user.create", "scim.user.update", "scim.user.deactivate", "scim.user.delete", "scim.group.create", "scim.group.update", "scim.group.delete"} {
		if !scimActions[want] {
			t.Errorf("no %s entry; have %v", want, scimActions)
		}
	}
	// The JSON-lines export has them all, and no secret.
	status, hdr, export := b.do(t, "GET", "/v1/organizations/audit_log?format=jsonl", adminKey, "")
	if status != 200 || hdr.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("export: %d %s", status, hdr.Get("Content-Type"))
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(export))
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.ID == "" {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines != len(all.Data) {
		t.Errorf("export has %d lines, the log %d entries", lines, len(all.Data))
	}
	for _, s := range []string{k.Value, secret, scimToken, adminKey, "1mz050nq", hex.EncodeToString(sum[:])} {
		if bytes.Contains(export, []byte(s)) {
			t.Errorf("the audit export contains a secret (%d bytes)", len(s))
		}
	}
	t.Logf("audit log: %d entries, export %d bytes", lines, len(export))
}
