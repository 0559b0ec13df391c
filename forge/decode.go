package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/workctx"
)

// maxText bounds a title or author as stored.
const maxText = 300

// githubPull is the part of GitHub's pull_request event read here.
type githubPull struct {
	Action      string `json:"action"`
	PullRequest *struct {
		Number    int64      `json:"number"`
		HTMLURL   string     `json:"html_url"`
		Title     string     `json:"title"`
		State     string     `json:"state"`
		Merged    bool       `json:"merged"`
		CreatedAt *time.Time `json:"created_at"`
		UpdatedAt *time.Time `json:"updated_at"`
		MergedAt  *time.Time `json:"merged_at"`
		ClosedAt  *time.Time `json:"closed_at"`
		User      struct {
			Login string `json:"login"`
		} `json:"user"`
		Head struct {
			Ref string `json:"ref"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository struct {
		HTMLURL string `json:"html_url"`
	} `json:"repository"`
}

// DecodeGitHub reads a pull_request event's payload into a Pull.
func DecodeGitHub(body []byte) (ledger.Pull, error) {
	var ev githubPull
	if err := json.Unmarshal(body, &ev); err != nil {
		return ledger.Pull{}, fmt.Errorf("pull_request payload: %w", err)
	}
	pr := ev.PullRequest
	if pr == nil {
		return ledger.Pull{}, errors.New("pull_request payload without pull_request")
	}
	p := ledger.Pull{Forge: "github", Repo: workctx.NormalizeRepo(ev.Repository.HTMLURL), Number: pr.Number,
		Branch: workctx.CleanBranch(pr.Head.Ref), Title: clip(pr.Title), Author: clip(pr.User.Login), URL: cleanURL(pr.HTMLURL),
		OpenedAt: at(pr.CreatedAt), UpdatedAt: at(pr.UpdatedAt), MergedAt: at(pr.MergedAt), ClosedAt: at(pr.ClosedAt)}
	switch {
	case pr.Merged || !p.MergedAt.IsZero():
		p.State = ledger.PullMerged
	case pr.State == "closed":
		p.State = ledger.PullClosed
	default:
		p.State, p.MergedAt, p.ClosedAt = ledger.PullOpen, time.Time{}, time.Time{}
	}
	return p, check(p)
}

// gitlabMerge is the part of GitLab's Merge Request Hook read here.
type gitlabMerge struct {
	ObjectKind string `json:"object_kind"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	Project struct {
		WebURL string `json:"web_url"`
	} `json:"project"`
	Attrs *struct {
		IID          int64  `json:"iid"`
		Title        string `json:"title"`
		SourceBranch string `json:"source_branch"`
		State        string `json:"state"`
		Action       string `json:"action"`
		URL          string `json:"url"`
		CreatedAt    string `json:"created_at"`
		UpdatedAt    string `json:"updated_at"`
		MergedAt     string `json:"merged_at"`
		ClosedAt     string `json:"closed_at"`
	} `json:"object_attributes"`
}

// DecodeGitLab reads a Merge Request Hook's payload into a Pull. GitLab
// names the author only as an id, so the author is the user who opened
// it, known from the open event; later events leave it as stored.
func DecodeGitLab(body []byte) (ledger.Pull, error) {
	var ev gitlabMerge
	if err := json.Unmarshal(body, &ev); err != nil {
		return ledger.Pull{}, fmt.Errorf("merge request payload: %w", err)
	}
	a := ev.Attrs
	if ev.ObjectKind != "merge_request" || a == nil {
		return ledger.Pull{}, errors.New("not a merge_request payload")
	}
	p := ledger.Pull{Forge: "gitlab", Repo: workctx.NormalizeRepo(ev.Project.WebURL), Number: a.IID,
		Branch: workctx.CleanBranch(a.SourceBranch), Title: clip(a.Title), URL: cleanURL(a.URL),
		OpenedAt: gitlabTime(a.CreatedAt), UpdatedAt: gitlabTime(a.UpdatedAt)}
	if a.Action == "open" {
		p.Author = clip(ev.User.Username)
	}
	switch a.State {
	case "merged":
		p.State, p.MergedAt = ledger.PullMerged, gitlabTime(a.MergedAt)
		if p.MergedAt.IsZero() {
			p.MergedAt = p.UpdatedAt
		}
	case "closed":
		p.State, p.ClosedAt = ledger.PullClosed, gitlabTime(a.ClosedAt)
		if p.ClosedAt.IsZero() {
			p.ClosedAt = p.UpdatedAt
		}
	default:
		p.State = ledger.PullOpen
	}
	return p, check(p)
}

func check(p ledger.Pull) error {
	switch {
	case p.Repo == "":
		return errors.New("the payload names no repository URL")
	case p.Number <= 0:
		return errors.New("the payload names no pull request number")
	case p.Branch == "":
		return errors.New("the payload names no source branch")
	case p.UpdatedAt.IsZero():
		return errors.New("the payload has no updated_at time")
	}
	return nil
}

func at(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// gitlabTime reads GitLab's two time formats: RFC 3339 and, in older
// releases, "2006-01-02 15:04:05 UTC".
func gitlabTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// clip keeps printable text of at most maxText bytes.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > maxText {
		s = strings.ToValidUTF8(s[:maxText], "")
	}
	return s
}

// cleanURL keeps an https link without credentials, or nothing.
func cleanURL(s string) string {
	if !strings.HasPrefix(s, "https://") || strings.ContainsAny(s, "@ \"<>") || len(s) > 2*maxText {
		return ""
	}
	return s
}
