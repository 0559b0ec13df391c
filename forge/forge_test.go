package forge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
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
	merged := make(chan ledger.Pull, 4)
	rc := NewReceiver(Options{GitHubSecret: "s3cret", Store: func() ledger.WorkStore { return st },
		Merged: func(_ context.Context, p ledger.Pull) { merged <- p }})
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
	if got := testwait.Receive(t, "told of the merge", merged, 1); got[0].Number != 7 || len(merged) != 0 {
		t.Fatalf("merged told %+v, then %d more", got, len(merged))
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
	// A URL with a query, parameters or a fragment is told so, not that
	// the repository is missing, and the error does not echo its token.
	for _, repo := range []string{"git@github.com:acme/shop.git?x=ghp_TOKEN", "https://github.com/acme/shop;ghp_TOKEN"} {
		_, err := DecodeContext([]byte(`{"session_id":"s","repository":"` + repo + `"}`))
		if err == nil || !strings.Contains(err.Error(), "repository: a remote URL with a query") || strings.Contains(err.Error(), "ghp_TOKEN") {
			t.Errorf("%s: %v", repo, err)
		}
	}
	// A token pasted into the path is not stored.
	if c, err := DecodeContext([]byte(`{"session_id":"s","repository":"ssh://git@github.com:22/acme/shop/ghp_u8jzpde0igxld6gncfbaepfjbd0kh8oool8d"}`)); err != nil || c.Repository != "github.com/acme/shop" {
		t.Errorf("a token in the path: %+v %v", c, err)
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

// With a token, a merged pull request gets one comment with its agent
// cost, on the fake forge API; a later merged event, or a second
// commenter (another instance), posts nothing.
func TestMergedCommentOnce(t *testing.T) {
	st := openLedger(t)
	s := st.(ledger.Store)
	ctx := context.Background()
	t0 := time.Date(2025, 9, 1, 10, 0, 0, 0, time.UTC)
	if err := st.PutWorkContext(ctx, ledger.WorkContext{KeyID: "alice", SessionID: "s1", Time: t0, Repo: "github.com/acme/shop", Branch: "feat/cart"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, []ledger.Record{{Time: t0.Add(time.Minute), KeyID: "alice", SessionID: "s1", Alias: "m", ServiceTier: "standard",
		InputTokens: 10, Status: 200, Outcome: "ok", CostPicoUSD: 123 * money.PicoPerCent}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var posts []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer api.Close()
	c := &Commenter{GitHubToken: "ghp_comment", GitHubAPI: api.URL, Store: func() ledger.WorkStore { return st },
		Now: func() time.Time { return t0.Add(2 * time.Hour) }}
	rc := NewReceiver(Options{GitHubSecret: "s3cret", Store: func() ledger.WorkStore { return st }, Merged: c.Merged,
		Now: func() time.Time { return t0.Add(2 * time.Hour) }})
	body := strings.ReplaceAll(githubMerged, "2025-09-01T12:00:00Z", "2025-09-01T11:00:00Z")
	body = strings.ReplaceAll(body, "2025-09-01T10:00:00Z", "2025-09-01T10:30:00Z")
	h := map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "m-1", "X-Hub-Signature-256": sign("s3cret", body)}
	if w := deliver(rc, GitHubPath, h, body); w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if !testwait.Until(func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) == 1 }) {
		t.Fatal("no comment posted")
	}
	// An edit after the merge is another delivery reporting it merged.
	edited := strings.Replace(body, `"action":"closed"`, `"action":"edited"`, 1)
	edited = strings.ReplaceAll(edited, `"updated_at":"2025-09-01T11:00:00Z"`, `"updated_at":"2025-09-01T11:05:00Z"`)
	h = map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "m-2", "X-Hub-Signature-256": sign("s3cret", edited)}
	if w := deliver(rc, GitHubPath, h, edited); w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	pulls, _ := st.Pulls(ctx, nil)
	c.Merged(ctx, pulls[0]) // another instance told of the same merge
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 1 || !strings.HasPrefix(posts[0], "POST /repos/acme/shop/issues/7/comments Bearer ghp_comment ") ||
		!strings.Contains(posts[0], "$1.23") || !strings.Contains(posts[0], "1 coding-agent session ") {
		t.Fatalf("posts %q", posts)
	}
}

// BenchmarkNote is what a model request with a session pays for the
// headers: none sent, and the same context as the last request.
func BenchmarkNote(b *testing.B) {
	c := &Contexts{}
	at := time.Now()
	b.Run("no-headers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Note("alice", "sess-1", "", "", at)
		}
	})
	c.Note("alice", "sess-1", "https://github.com/acme/shop.git", "main", at)
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Note("alice", "sess-1", "https://github.com/acme/shop.git", "main", at)
		}
	})
}

// A client's headers become the session's context once per change, the
// credentials of its URL dropped; a header naming no remote is ignored.
func TestNoteWritesChangesOnly(t *testing.T) {
	st := openLedger(t)
	ctx := context.Background()
	t0 := time.Date(2025, 9, 1, 10, 0, 0, 0, time.UTC)
	rec := func(session string, at time.Duration) ledger.Record {
		return ledger.Record{Time: t0.Add(at), KeyID: "alice", SessionID: session, Alias: "m", ServiceTier: "standard", Status: 200, Outcome: "ok", InputTokens: 1}
	}
	if err := st.(ledger.Store).Insert(ctx, []ledger.Record{rec("s1", 30*time.Second), rec("s1", 210*time.Second), rec("s2", time.Second)}); err != nil {
		t.Fatal(err)
	}
	c := &Contexts{Store: func() ledger.WorkStore { return st }}
	const remote = "https://ci:glpat-SECRET@gitlab.example.com/g/app.git"
	c.Note("alice", "s1", remote, "main", t0)
	c.Note("alice", "s1", remote, "main", t0.Add(time.Minute)) // unchanged: not written
	c.Note("alice", "s1", remote, "fix", t0.Add(3*time.Minute))
	c.Note("alice", "s2", "/home/alice/app", "main", t0)
	var got []string
	ok := testwait.Until(func() bool {
		rows, err := st.WorkRows(ctx, ledger.Filter{From: t0, To: t0.Add(time.Hour)}, time.Hour)
		if err != nil {
			return false
		}
		got = got[:0]
		for _, r := range rows {
			got = append(got, r.SessionID+" "+r.Repo+" "+r.Branch)
		}
		return strings.Join(got, "|") == "s1 gitlab.example.com/g/app fix|s1 gitlab.example.com/g/app main|s2  " ||
			strings.Join(got, "|") == "s1 gitlab.example.com/g/app main|s1 gitlab.example.com/g/app fix|s2  "
	})
	if !ok {
		t.Fatalf("rows %q", got)
	}
}
