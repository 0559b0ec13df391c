// Package forge receives a forge's pull request webhooks (GitHub's
// pull_request events at /hooks/github, GitLab's Merge Request Hook at
// /hooks/gitlab), verified with a configured secret and refused when
// replayed, and records each request's branch, number, title, author,
// state and times in the ledger, where the work report joins them to the
// sessions that worked on the branch. It also takes a session's work
// context from the agents' hooks (POST /v1/work/context) and from the
// X-Modelgate-Repo and X-Modelgate-Branch headers.
package forge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Paths of the webhook receivers.
const (
	GitHubPath = "/hooks/github"
	GitLabPath = "/hooks/gitlab"
)

// maxPayload bounds a webhook's body: a pull request event with a long
// description is well under it.
const maxPayload = 5 << 20

// Options configures the receivers. A forge without its secret is not
// served (404).
type Options struct {
	// GitHubSecret is the webhook's secret: X-Hub-Signature-256 must be
	// its HMAC-SHA256 of the body.
	GitHubSecret string
	// GitLabToken is the webhook's secret token: X-Gitlab-Token must
	// equal it.
	GitLabToken string
	// Store is the ledger's work store; nil while the ledger is not open
	// (503, the forge retries).
	Store func() ledger.WorkStore
	// Merged is told, on a goroutine of its own, of each pull request a
	// first delivery reports merged, after it is stored (the cost
	// comment); nil: nothing.
	Merged func(ctx context.Context, p ledger.Pull)
	Now    func() time.Time
}

// Receiver answers the forges' webhooks.
type Receiver struct{ o Options }

// NewReceiver returns a receiver with o's defaults filled in.
func NewReceiver(o Options) *Receiver {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Receiver{o: o}
}

// Match reports whether r is for a receiver this one serves.
func (rc *Receiver) Match(r *http.Request) bool {
	return r.URL.Path == GitHubPath && rc.o.GitHubSecret != "" || r.URL.Path == GitLabPath && rc.o.GitLabToken != ""
}

// ServeHTTP answers a webhook delivery.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, "webhooks are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	if err != nil {
		answer(w, http.StatusRequestEntityTooLarge, "payload over 5 MiB or unreadable")
		return
	}
	var d delivery
	switch r.URL.Path {
	case GitHubPath:
		d = githubDelivery(r.Header, body, rc.o.GitHubSecret)
	case GitLabPath:
		d = gitlabDelivery(r.Header, body, rc.o.GitLabToken)
	default:
		answer(w, http.StatusNotFound, "no webhook receiver here")
		return
	}
	if d.status != 0 {
		answer(w, d.status, d.msg)
		return
	}
	status, msg := rc.record(r.Context(), d, body)
	answer(w, status, msg)
}

// delivery is a verified webhook: which forge, its delivery id and its
// event; status is set instead when it is refused or ignored.
type delivery struct {
	forge, id string
	decode    func([]byte) (ledger.Pull, error)
	status    int
	msg       string
}

func githubDelivery(h http.Header, body []byte, secret string) delivery {
	sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	want := hmac.New(sha256.New, []byte(secret))
	want.Write(body)
	got, err := hex.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, want.Sum(nil)) {
		return delivery{status: http.StatusUnauthorized, msg: "X-Hub-Signature-256 does not match the configured github_secret"}
	}
	switch h.Get("X-GitHub-Event") {
	case "pull_request":
	case "ping":
		return delivery{status: http.StatusOK, msg: "pong"}
	default:
		return delivery{status: http.StatusAccepted, msg: "ignored: only pull_request events are recorded"}
	}
	return delivery{forge: "github", id: h.Get("X-GitHub-Delivery"), decode: DecodeGitHub}
}

func gitlabDelivery(h http.Header, body []byte, token string) delivery {
	if subtle.ConstantTimeCompare([]byte(h.Get("X-Gitlab-Token")), []byte(token)) != 1 {
		return delivery{status: http.StatusUnauthorized, msg: "X-Gitlab-Token does not match the configured gitlab_token"}
	}
	if h.Get("X-Gitlab-Event") != "Merge Request Hook" {
		return delivery{status: http.StatusAccepted, msg: "ignored: only Merge Request Hook events are recorded"}
	}
	id := h.Get("X-Gitlab-Event-UUID")
	if id == "" {
		id = h.Get("Idempotency-Key")
	}
	return delivery{forge: "gitlab", id: id, decode: DecodeGitLab}
}

// record stores a verified delivery once. Both its delivery id and its
// body's digest are claimed: the id is not covered by GitHub's signature,
// so a captured body resent under a fresh id is a replay too.
func (rc *Receiver) record(ctx context.Context, d delivery, body []byte) (int, string) {
	if d.id == "" || len(d.id) > 200 {
		return http.StatusBadRequest, "the delivery has no delivery id header"
	}
	p, err := d.decode(body)
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	var st ledger.WorkStore
	if rc.o.Store != nil {
		st = rc.o.Store()
	}
	if st == nil {
		return http.StatusServiceUnavailable, "the ledger is not open yet; redeliver later"
	}
	// Stored before the claims, so a failed claim leaves the forge's
	// redelivery something to do; a replay's write changes nothing (same
	// or older updated_at).
	if err := st.PutPull(ctx, p); err != nil {
		return http.StatusServiceUnavailable, "the ledger cannot be written; redeliver later"
	}
	digest := sha256.Sum256(body)
	now := rc.o.Now()
	for _, id := range []string{"id:" + d.id, "sha256:" + hex.EncodeToString(digest[:])} {
		first, err := st.ClaimDelivery(ctx, d.forge, id, now)
		if err != nil {
			return http.StatusServiceUnavailable, "the ledger cannot be written; redeliver later"
		}
		if !first {
			return http.StatusConflict, "replayed delivery refused"
		}
	}
	if p.State == ledger.PullMerged && rc.o.Merged != nil {
		// Aside from the delivery: the forge waits only seconds for its
		// answer.
		go rc.o.Merged(context.WithoutCancel(ctx), p)
	}
	return http.StatusOK, "recorded"
}

func answer(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
