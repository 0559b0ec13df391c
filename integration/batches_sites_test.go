package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testwait"
)

// The second site's keys: its own bob (same id as the first site's, other
// secret), carol and its admin.
const (
	siteBBobKey   = "sk-test-siteb-bob-0123456789"
	siteBCarolKey = "sk-test-siteb-carol-0123456789"
	siteBAdminKey = "sk-test-siteb-admin-0123456789"
)

// TestBatchesTwoSites: two sites in one Caddyfile on one SQLite ledger,
// each with its own llm_auth, llm_admin and llm_gateway, both declaring a
// key with the id bob. The first site's batches run (each site's worker
// knows its own site's keys), neither site's bob reads or deletes the
// other's batches and files, and each site's admin API lists its own keys.
func TestBatchesTwoSites(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	dir := t.TempDir()
	port := freePort(t)
	siteB := fmt.Sprintf(`http://127.0.0.1:%d {
	bind 127.0.0.1
	llm_auth {
		key {env.SITEB_BOB} {
			id bob
		}
		key {env.SITEB_CAROL} {
			id carol
		}
		admin_key {env.SITEB_ADMIN}
	}
	llm_admin
	llm_gateway {
		models %s
	}
}`, port, filepath.Join(dir, "models.yaml"))
	a := startGateway(t, gatewayConfig{models: u.modelsYAML(), dir: dir, moreSites: siteB,
		env: []string{"SITEB_BOB=" + siteBBobKey, "SITEB_CAROL=" + siteBCarolKey, "SITEB_ADMIN=" + siteBAdminKey}})
	b := &gateway{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if !testwait.Until(func() bool {
		status, _, _ := b.do(t, "GET", "/v1/models", siteBCarolKey, "")
		return status == 200
	}) {
		t.Fatal("the second site never answered")
	}

	create := func(g *gateway, key string) string {
		t.Helper()
		status, _, out := g.do(t, "POST", "/v1/messages/batches", key,
			`{"requests":[{"custom_id":"a","params":{"model":"echo","max_tokens":10,"messages":[{"role":"user","content":"private prompt"}]}},`+
				`{"custom_id":"b","params":{"model":"echo","max_tokens":10,"messages":[{"role":"user","content":"x"}]}}]}`)
		if status != 200 {
			t.Fatalf("create: %d %s", status, out)
		}
		var mb struct{ ID string }
		_ = json.Unmarshal(out, &mb)
		return mb.ID
	}
	ended := func(g *gateway, key, id string) map[string]int {
		t.Helper()
		var mb struct {
			ProcessingStatus string         `json:"processing_status"`
			RequestCounts    map[string]int `json:"request_counts"`
		}
		if !testwait.Until(func() bool {
			_, _, out := g.do(t, "GET", "/v1/messages/batches/"+id, key, "")
			_ = json.Unmarshal(out, &mb)
			return mb.ProcessingStatus == "ended"
		}) {
			t.Fatalf("batch %s never ended: %+v", id, mb)
		}
		return mb.RequestCounts
	}

	// Every site's batches run, the first site's included: each site's
	// worker finds its own site's keys.
	for _, c := range []struct {
		name string
		g    *gateway
		key  string
	}{{"site A alice", a, aliceKey}, {"site A bob", a, bobKey}, {"site B carol", b, siteBCarolKey}, {"site B bob", b, siteBBobKey}} {
		id := create(c.g, c.key)
		if counts := ended(c.g, c.key, id); counts["succeeded"] != 2 || counts["errored"] != 0 {
			t.Errorf("%s's batch: %v", c.name, counts)
		}
	}

	// Site A's bob's batch and file are invisible to site B's bob.
	id := create(a, bobKey)
	ended(a, bobKey, id)
	upload := `{"custom_id":"s","method":"POST","url":"/v1/chat/completions","body":{"model":"echo","messages":[{"role":"user","content":"site A bob private"}]}}`
	fileID := uploadFile(t, a.base, bobKey, upload)
	for _, path := range []string{"/v1/messages/batches/" + id, "/v1/messages/batches/" + id + "/results", "/v1/files/" + fileID, "/v1/files/" + fileID + "/content"} {
		if status, _, out := b.do(t, "GET", path, siteBBobKey, ""); status != 404 {
			t.Errorf("site B's bob: GET %s = %d %s", path, status, out)
		}
	}
	if status, _, out := b.do(t, "DELETE", "/v1/files/"+fileID, siteBBobKey, ""); status != 404 {
		t.Errorf("site B's bob deletes site A's file: %d %s", status, out)
	}
	for _, path := range []string{"/v1/messages/batches", "/v1/files"} {
		if _, _, out := b.do(t, "GET", path, siteBBobKey, ""); strings.Contains(string(out), id) || strings.Contains(string(out), fileID) {
			t.Errorf("site B's bob lists site A's: %s", out)
		}
	}
	if status, _, out := a.do(t, "GET", "/v1/files/"+fileID+"/content", bobKey, ""); status != 200 || !strings.Contains(string(out), "site A bob private") {
		t.Errorf("site A's bob reads own file: %d %s", status, out)
	}

	// The shared id is warned about, as records and budgets still count
	// it as one key; the admin keys' default id is not.
	var warned []string
	for _, line := range strings.Split(a.stderr.String(), "\n") {
		if strings.Contains(line, "a key id is declared on more than one site") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `"key_id":"bob"`) {
		t.Errorf("warnings of a shared key id: %q", warned)
	}

	// Each site's admin API lists its own Caddyfile keys.
	for _, c := range []struct {
		g         *gateway
		key       string
		want, not []string
	}{{a, adminKey, []string{`"alice"`, `"bob"`}, []string{`"carol"`}}, {b, siteBAdminKey, []string{`"carol"`, `"bob"`}, []string{`"alice"`}}} {
		status, _, out := c.g.do(t, "GET", "/v1/organizations/api_keys?limit=100", c.key, "")
		if status != 200 {
			t.Fatalf("list keys: %d %s", status, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), `"id":`+w) {
				t.Errorf("%s's key list lacks %s: %s", c.g.base, w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(string(out), `"id":`+n) {
				t.Errorf("%s's key list shows the other site's %s: %s", c.g.base, n, out)
			}
		}
	}
}

// uploadFile uploads content as a batch input file with key and returns
// its id.
func uploadFile(t *testing.T, base, key, content string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = fw.Write([]byte(content + "\n"))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", base+"/v1/files", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || resp.StatusCode != 200 || f.ID == "" {
		t.Fatalf("upload: %d %v", resp.StatusCode, err)
	}
	return f.ID
}
