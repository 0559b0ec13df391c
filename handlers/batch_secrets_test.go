package handlers

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestBatchInputsStoredScreened (hostile pass 10, H10-2): a batch's
// inputs are kept for the batches retention, so they are stored as the
// firewall screens them: under redact a Message Batch's items and an
// uploaded input file (and its download) hold the placeholder, never the
// credential; under block the create and the upload are refused naming
// the request, never the value.
func TestBatchInputsStoredScreened(t *testing.T) {
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	yaml := "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/e\n    secrets: {action: redact}\n" +
		"  - model_name: strict\n    proxy_params:\n      model: echo/s\n    secrets: {action: block}\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
		o.Secrets = fw
	})
	pat := secrettest.Corpus(5)[8].Value
	bob := &policy.Identity{KeyID: "bob"}
	send := func(method, path, contentType string, body io.Reader) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, body)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req = req.WithContext(policy.WithIdentity(req.Context(), bob))
		rr := httptest.NewRecorder()
		g.ServeHTTP(rr, req)
		return rr
	}
	item := func(alias, id string) string {
		return `{"custom_id":"` + id + `","params":{"model":"` + alias + `","max_tokens":5,"messages":[{"role":"user","content":"token ` + pat + `"}]}}`
	}
	rr := send(http.MethodPost, "/v1/messages/batches", "application/json", strings.NewReader(`{"requests":[`+item("local", "q1")+`]}`))
	var created struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &created); rr.Code != 200 || err != nil {
		t.Fatalf("create: %d %s", rr.Code, rr.Body)
	}
	// What the table holds, read as a backup would.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored string
	if err := db.QueryRowContext(context.Background(), `SELECT body FROM batch_items WHERE batch_id = ?`, created.ID).Scan(&stored); err != nil ||
		strings.Contains(stored, pat) || !strings.Contains(stored, "[REDACTED:github-pat:") {
		t.Fatalf("stored item %s %v", stored, err)
	}
	rr = send(http.MethodPost, "/v1/messages/batches", "application/json", strings.NewReader(`{"requests":[`+item("local", "q1")+`,`+item("strict", "q2")+`]}`))
	if rr.Code != 400 || !strings.Contains(rr.Body.String(), "request 1 (custom_id q2)") || !strings.Contains(rr.Body.String(), "github-pat") || strings.Contains(rr.Body.String(), pat) {
		t.Fatalf("block: %d %s", rr.Code, rr.Body)
	}

	upload := func(alias string) *httptest.ResponseRecorder {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("purpose", "batch")
		fw, _ := mw.CreateFormFile("file", "input.jsonl")
		_, _ = fw.Write([]byte(`{"custom_id":"plain","method":"POST","url":"/v1/chat/completions","body":{"model":"local","messages":[{"role":"user","content":"hi"}]}}` + "\n" +
			`{"custom_id":"c1","method":"POST","url":"/v1/chat/completions","body":{"model":"` + alias + `","messages":[{"role":"user","content":"token ` + pat + `"}]}}` + "\n"))
		_ = mw.Close()
		return send(http.MethodPost, "/v1/files", mw.FormDataContentType(), &body)
	}
	rr = upload("local")
	var file struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &file); rr.Code != 200 || err != nil {
		t.Fatalf("upload: %d %s", rr.Code, rr.Body)
	}
	content := send(http.MethodGet, "/v1/files/"+file.ID+"/content", "", nil).Body.String()
	if strings.Contains(content, pat) || !strings.Contains(content, "[REDACTED:github-pat:") || !strings.HasPrefix(content, `{"custom_id":"plain"`) || strings.Count(content, "\n") != 2 {
		t.Fatalf("stored file: %s", content)
	}
	rr = send(http.MethodPost, "/v1/batches", "application/json", strings.NewReader(`{"input_file_id":"`+file.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	if rr.Code != 200 {
		t.Fatalf("batch of the screened file: %d %s", rr.Code, rr.Body)
	}
	if rr = upload("strict"); rr.Code != 400 || !strings.Contains(rr.Body.String(), `line 2 (custom_id \"c1\")`) || strings.Contains(rr.Body.String(), pat) {
		t.Fatalf("block upload: %d %s", rr.Code, rr.Body)
	}
}

// TestBatchCustomIDSecretRefused (hostile pass 10): a custom_id comes
// back to the client as sent, so one that is itself a credential cannot
// be redacted: under redact or block the create and the upload are
// refused naming the request's index or line, never the id; an id that
// is no credential (a UUID) is kept.
func TestBatchCustomIDSecretRefused(t *testing.T) {
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	yaml := "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/e\n    secrets: {action: redact}\n" +
		"  - model_name: open\n    proxy_params:\n      model: echo/o\n    secrets: {action: off}\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
		o.Secrets = fw
	})
	pat := secrettest.Corpus(5)[8].Value
	send := func(path, contentType string, body io.Reader) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, body)
		req.Header.Set("Content-Type", contentType)
		req = req.WithContext(policy.WithIdentity(req.Context(), &policy.Identity{KeyID: "bob"}))
		rr := httptest.NewRecorder()
		g.ServeHTTP(rr, req)
		return rr
	}
	item := func(alias, id string) string {
		return `{"custom_id":"` + id + `","params":{"model":"` + alias + `","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}`
	}
	const uuid = "3f1c2a9e-7b4d-4c1a-9f0e-5d2b8a6c4e71"
	rr := send("/v1/messages/batches", "application/json", strings.NewReader(`{"requests":[`+item("local", uuid)+`,`+item("local", pat)+`]}`))
	if rr.Code != 400 || !strings.Contains(rr.Body.String(), "request 1") || !strings.Contains(rr.Body.String(), "github-pat") || strings.Contains(rr.Body.String(), pat) {
		t.Fatalf("secret custom_id: %d %s", rr.Code, rr.Body)
	}
	if rr = send("/v1/messages/batches", "application/json", strings.NewReader(`{"requests":[`+item("local", uuid)+`,`+item("open", pat)+`]}`)); rr.Code != 200 {
		t.Fatalf("a model whose action is off takes any id: %d %s", rr.Code, rr.Body)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fwr, _ := mw.CreateFormFile("file", "input.jsonl")
	_, _ = fwr.Write([]byte(`{"custom_id":"` + uuid + `","method":"POST","url":"/v1/chat/completions","body":{"model":"local","messages":[{"role":"user","content":"hi"}]}}` + "\n" +
		`{"custom_id":"` + pat + `","method":"POST","url":"/v1/chat/completions","body":{"model":"local","messages":[{"role":"user","content":"hi"}]}}` + "\n"))
	_ = mw.Close()
	if rr = send("/v1/files", mw.FormDataContentType(), &body); rr.Code != 400 || !strings.Contains(rr.Body.String(), "line 2") || strings.Contains(rr.Body.String(), pat) {
		t.Fatalf("upload with a secret custom_id: %d %s", rr.Code, rr.Body)
	}
}
