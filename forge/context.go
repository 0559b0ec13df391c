package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/workctx"
)

// Contexts takes sessions' work contexts: the agents' hooks' posts and the
// headers of clients without hooks.
type Contexts struct {
	// Store is the ledger's work store; nil while it is not open.
	Store func() ledger.WorkStore
	// Caller names the authenticated key; ok false answers 401.
	Caller func(r *http.Request) (keyID string, ok bool)
	Now    func() time.Time

	mu   sync.Mutex
	last map[[2]string][2]string // (key, session) → (repo, branch) last noted from headers
}

func (c *Contexts) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// ServeHTTP answers POST /v1/work/context with a workctx.Context body.
func (c *Contexts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answerError(w, http.StatusMethodNotAllowed, "POST a work context here")
		return
	}
	key, ok := "", false
	if c.Caller != nil {
		key, ok = c.Caller(r)
	}
	if !ok {
		answerError(w, http.StatusUnauthorized, "missing or unknown API key")
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<10))
	if err != nil {
		answerError(w, http.StatusRequestEntityTooLarge, "a work context is at most 16 KiB")
		return
	}
	in, err := DecodeContext(b)
	if err != nil {
		answerError(w, http.StatusBadRequest, err.Error())
		return
	}
	st := c.store()
	if st == nil {
		answerError(w, http.StatusServiceUnavailable, "the ledger is not open yet")
		return
	}
	if err := st.PutWorkContext(r.Context(), ledger.WorkContext{KeyID: key, SessionID: in.SessionID, Time: c.now(),
		Repo: in.Repository, Branch: in.Branch, Head: in.Head}); err != nil {
		answerError(w, http.StatusServiceUnavailable, "the ledger cannot be written")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// DecodeContext reads a hook's post: a JSON object whose repository reads
// as a remote (normalised, so credentials are dropped before anything is
// stored) and whose session is a valid id.
func DecodeContext(b []byte) (workctx.Context, error) {
	var in workctx.Context
	if err := json.Unmarshal(b, &in); err != nil {
		return in, errString("the body is not a work context object: " + err.Error())
	}
	clean := in.Clean()
	switch {
	case clean.SessionID == "":
		return clean, errString("session_id: required, at most 128 printable characters")
	case clean.Repository == "":
		return clean, errString("repository: " + workctx.RepoProblem(in.Repository))
	}
	return clean, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func (c *Contexts) store() ledger.WorkStore {
	if c.Store == nil {
		return nil
	}
	return c.Store()
}

// maxNoted bounds the sessions whose last header context is remembered.
const maxNoted = 1 << 16

// Note takes the work context a model request's headers name, for
// clients without hooks, in force from the request's start at. Only a change from the session's last noted
// context is written, aside from the request: a request adds no ledger
// write of its own.
func (c *Contexts) Note(keyID, session, repo, branch string, at time.Time) {
	if session == "" || (repo == "" && branch == "") {
		return
	}
	// Compared as sent, so a session's every request after the first
	// costs a map lookup, not a URL parse.
	k, v := [2]string{keyID, session}, [2]string{repo, branch}
	c.mu.Lock()
	if c.last[k] == v {
		c.mu.Unlock()
		return
	}
	if c.last == nil || len(c.last) >= maxNoted {
		c.last = make(map[[2]string][2]string)
	}
	c.last[k] = v
	c.mu.Unlock()
	wc := ledger.WorkContext{KeyID: keyID, SessionID: session, Time: at, Repo: workctx.NormalizeRepo(repo), Branch: workctx.CleanBranch(branch)}
	st := c.store()
	if wc.Repo == "" || st == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if st.PutWorkContext(ctx, wc) != nil {
			c.mu.Lock()
			delete(c.last, k) // written next time instead
			c.mu.Unlock()
		}
	}()
}

func answerError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errorType(status), "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusServiceUnavailable:
		return "api_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	}
	return "invalid_request_error"
}
