package forge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

func openLedger(t *testing.T) ledger.WorkStore {
	t.Helper()
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(ledger.WorkStore)
}

const githubMerged = `{"action":"closed","number":7,"pull_request":{"number":7,"html_url":"https://github.com/Acme/Shop/pull/7",
"title":"ABC-12: cart","state":"closed","merged":true,"created_at":"2025-09-01T10:00:00Z","updated_at":"2025-09-01T12:00:00Z",
"merged_at":"2025-09-01T12:00:00Z","closed_at":"2025-09-01T12:00:00Z","user":{"login":"alice"},"head":{"ref":"feat/cart"}},
"repository":{"full_name":"Acme/Shop","html_url":"https://x-access-token:ghs_SECRET@github.com/Acme/Shop.git"}}`

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func deliver(rc *Receiver, path string, h map[string]string, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	return w
}

// A signed delivery is recorded once; a wrong signature, the same
// delivery again, or the same body under a fresh delivery id is refused.
// The repository's credentials in the payload never reach the ledger.
func TestGitHubWebhook(t *testing.T) {
	st := openLedger(t)
	var merged []ledger.Pull
	rc := NewReceiver(Options{GitHubSecret: "s3cret", Store: func() ledger.WorkStore { return st },
		Merged: func(_ context.Context, p ledger.Pull) { merged = append(merged, p) }})
	h := map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": sign("s3cret", githubMerged)}

	forged := map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d-0", "X-Hub-Signature-256": sign("guess", githubMerged)}
	if w := deliver(rc, GitHubPath, forged, githubMerged); w.Code != http.StatusUnauthorized {
		t.Fatalf("forged signature: %d %s", w.Code, w.Body)
	}
	unsigned := map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d-0"}
	if w := deliver(rc, GitHubPath, unsigned, githubMerged); w.Code != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d %s", w.Code, w.Body)
	}
	if w := deliver(rc, GitHubPath, h, githubMerged); w.Code != http.StatusOK {
		t.Fatalf("signed: %d %s", w.Code, w.Body)
	}
	if w := deliver(rc, GitHubPath, h, githubMerged); w.Code != http.StatusConflict {
		t.Fatalf("replayed delivery: %d %s", w.Code, w.Body)
	}
	h["X-GitHub-Delivery"] = "d-2"
	if w := deliver(rc, GitHubPath, h, githubMerged); w.Code != http.StatusConflict {
		t.Fatalf("replayed body under a new delivery id: %d %s", w.Code, w.Body)
	}
	if len(merged) != 1 {
		t.Fatalf("merged told %d times, want once", len(merged))
	}
	pulls, err := st.Pulls(context.Background(), nil)
	if err != nil || len(pulls) != 1 {
		t.Fatalf("pulls %v %v", pulls, err)
	}
	p := pulls[0]
	if p.Repo != "github.com/acme/shop" || p.Number != 7 || p.Branch != "feat/cart" || p.State != ledger.PullMerged ||
		p.Author != "alice" || !p.MergedAt.Equal(time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("stored %+v", p)
	}
	if strings.Contains(p.Repo+p.URL, "SECRET") {
		t.Fatalf("credentials stored: %+v", p)
	}
	ping := map[string]string{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-3", "X-Hub-Signature-256": sign("s3cret", "{}")}
	if w := deliver(rc, GitHubPath, ping, "{}"); w.Code != http.StatusOK {
		t.Fatalf("ping: %d", w.Code)
	}
	if rc.Match(httptest.NewRequest(http.MethodPost, GitLabPath, nil)) {
		t.Fatal("GitLab served without a token")
	}
}

const gitlabMergedBody = `{"object_kind":"merge_request","user":{"username":"bob"},"project":{"web_url":"https://gitlab.example.com/group/sub/app"},
"object_attributes":{"iid":3,"title":"Fix","source_branch":"XYZ-9-fix","state":"merged","action":"merge","url":"https://gitlab.example.com/group/sub/app/-/merge_requests/3",
"created_at":"2025-09-01 10:00:00 UTC","updated_at":"2025-09-01 11:00:00 UTC"}}`

func TestGitLabWebhook(t *testing.T) {
	st := openLedger(t)
	rc := NewReceiver(Options{GitLabToken: "tok", Store: func() ledger.WorkStore { return st }})
	h := map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Event-UUID": "u-1", "X-Gitlab-Token": "wrong"}
	if w := deliver(rc, GitLabPath, h, gitlabMergedBody); w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", w.Code)
	}
	h["X-Gitlab-Token"] = "tok"
	if w := deliver(rc, GitLabPath, h, gitlabMergedBody); w.Code != http.StatusOK {
		t.Fatalf("delivery: %d %s", w.Code, w.Body)
	}
	if w := deliver(rc, GitLabPath, h, gitlabMergedBody); w.Code != http.StatusConflict {
		t.Fatalf("replay: %d %s", w.Code, w.Body)
	}
	pulls, _ := st.Pulls(context.Background(), []string{"gitlab.example.com/group/sub/app"})
	if len(pulls) != 1 || pulls[0].State != ledger.PullMerged || pulls[0].Branch != "XYZ-9-fix" ||
		!pulls[0].MergedAt.Equal(time.Date(2025, 9, 1, 11, 0, 0, 0, time.UTC)) {
		t.Fatalf("stored %+v", pulls)
	}
}

func TestDecodeContext(t *testing.T) {
	c, err := DecodeContext([]byte(`{"session_id":"s-1","repository":"https://bot:ghp_SECRET@github.com/Acme/Shop.git","branch":"main","head":"ABCDEF0123456789abcdef0123456789abcdef01"}`))
	if err != nil || c.Repository != "github.com/acme/shop" || c.Branch != "main" || c.Head != "abcdef0123456789abcdef0123456789abcdef01" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{`{}`, `[]`, `{"session_id":"s","repository":"/home/alice/shop"}`, `{"repository":"github.com/a/b"}`} {
		if _, err := DecodeContext([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func FuzzDecodeGitHub(f *testing.F) {
	f.Add([]byte(githubMerged))
	f.Add([]byte(`{"pull_request":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeGitHub(b)
		if err == nil {
			checkPull(t, p)
		}
	})
}

func FuzzDecodeGitLab(f *testing.F) {
	f.Add([]byte(gitlabMergedBody))
	f.Add([]byte(`{"object_kind":"merge_request","object_attributes":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeGitLab(b)
		if err == nil {
			checkPull(t, p)
		}
	})
}

func FuzzDecodeContext(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","repository":"git@github.com:a/b.git","branch":"x"}`))
	f.Add([]byte(`{"session_id":"s","repository":"https://u:p@h.io:8443/a/b?x=1#y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeContext(b)
		if err != nil {
			return
		}
		if c.Repository == "" || c.SessionID == "" || strings.ContainsAny(c.Repository, "@:?#") {
			t.Fatalf("accepted %+v", c)
		}
		if again := c.Clean(); again != c {
			t.Fatalf("not idempotent: %+v then %+v", c, again)
		}
	})
}

func checkPull(t *testing.T, p ledger.Pull) {
	t.Helper()
	if p.Repo == "" || p.Number <= 0 || p.Branch == "" || strings.ContainsAny(p.Repo, "@:?#") || len(p.Title) > maxText || len(p.Author) > maxText {
		t.Fatalf("accepted %+v", p)
	}
	switch p.State {
	case ledger.PullOpen, ledger.PullMerged, ledger.PullClosed:
	default:
		t.Fatalf("state %q", p.State)
	}
}
