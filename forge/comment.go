package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// Commenter posts one comment on a merged pull request with what the
// agents' work on it cost. It is off unless a forge's token is set.
type Commenter struct {
	// GitHubToken and GitLabToken are API tokens allowed to comment;
	// empty: no comments on that forge.
	GitHubToken, GitLabToken string
	// GitHubAPI is GitHub's REST API root (default https://api.github.com);
	// GitLabAPI GitLab's (default https://<the request's host>/api/v4).
	GitHubAPI, GitLabAPI string
	Store                func() ledger.WorkStore
	Client               *http.Client
	// Lookback is how far before its opening a request's work is looked
	// for; default 30 days.
	Lookback time.Duration
	// Logf reports a comment that could not be posted; nil: nothing.
	Logf func(format string, args ...any)
	Now  func() time.Time
}

// Merged comments on p, once: the ledger's claim on the request (see
// ledger.WorkStore.MarkCommented) makes a second delivery, or another
// instance, post nothing. A failed post gives the claim back.
func (c *Commenter) Merged(ctx context.Context, p ledger.Pull) {
	token := c.GitHubToken
	if p.Forge == "gitlab" {
		token = c.GitLabToken
	}
	if token == "" || c.Store == nil {
		return
	}
	st := c.Store()
	if st == nil {
		return
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	first, err := st.MarkCommented(ctx, p.Repo, p.Number, now())
	if err != nil || !first {
		return
	}
	err = c.post(ctx, st, p, token, now())
	if err != nil {
		if c.Logf != nil {
			c.Logf("commenting the agent cost on %s #%d: %v", p.Repo, p.Number, err)
		}
		_ = st.UnmarkCommented(context.WithoutCancel(ctx), p.Repo, p.Number)
	}
}

func (c *Commenter) post(ctx context.Context, st ledger.WorkStore, p ledger.Pull, token string, now time.Time) error {
	lookback := c.Lookback
	if lookback <= 0 {
		lookback = 30 * 24 * time.Hour
	}
	from := p.OpenedAt
	if from.IsZero() {
		from = now
	}
	pico, requests, sessions, err := ledger.PullCost(ctx, st, p, from.Add(-lookback), now.Add(time.Minute))
	if err != nil {
		return err
	}
	text := fmt.Sprintf("Agent cost of this %s: **%s** over %d coding-agent session%s (%d model request%s), as the Modelgate gateway recorded it.",
		map[bool]string{true: "merge request", false: "pull request"}[p.Forge == "gitlab"], money.Dollars(pico/money.PicoPerCent),
		sessions, plural(sessions), requests, plural(int(requests)))
	host, path, _ := strings.Cut(p.Repo, "/")
	var target string
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if p.Forge == "gitlab" {
		api := c.GitLabAPI
		if api == "" {
			api = "https://" + host + "/api/v4"
		}
		target = fmt.Sprintf("%s/projects/%s/merge_requests/%d/notes", strings.TrimRight(api, "/"), url.PathEscape(path), p.Number)
		hdr.Set("PRIVATE-TOKEN", token)
	} else {
		api := c.GitHubAPI
		if api == "" {
			api = "https://api.github.com"
		}
		target = fmt.Sprintf("%s/repos/%s/issues/%d/comments", strings.TrimRight(api, "/"), path, p.Number)
		hdr.Set("Authorization", "Bearer "+token)
		hdr.Set("Accept", "application/vnd.github+json")
	}
	body, _ := json.Marshal(map[string]string{"body": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = hdr
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 20 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return redactedErr(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the forge answered %d", resp.StatusCode)
	}
	return nil
}

// redactedErr keeps a transport error without the URL it names.
func redactedErr(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
