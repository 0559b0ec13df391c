package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The gateway owns Responses API state on every backend: what a key
// stored (store: true) is in the ledger database, so a conversation goes
// on across aliases, backends, fallbacks and gateway instances, and no
// other key can read it.

// Timeout bounds one state lookup or write.
const Timeout = 10 * time.Second

// State is the Responses API's stored state of one gateway.
type State struct {
	// Store is the open store, or nil (no ledger database).
	Store func() ledger.ResponseStore
	// Runs is the background responses running on this instance.
	Runs *Runs
	// Now is the gateway's clock.
	Now func() time.Time
	// Redact redacts a finished answer before it is stored, so the state
	// holds what its client was sent (the secret firewall's answer
	// redaction); nil keeps it as it is.
	Redact func(id *policy.Identity, alias string, rec *ledger.Record, b []byte) []byte
	// Report tells of a write that failed, for the alias it served.
	Report func(alias, err string)
}

func (s *State) store() ledger.ResponseStore {
	if s.Store == nil {
		return nil
	}
	return s.Store()
}

// OpenStore is the open store, or nil.
func (s *State) OpenStore() ledger.ResponseStore { return s.store() }

func (s *State) report(alias, err string) {
	if s.Report != nil {
		s.Report(alias, err)
	}
}

// KeyOf is the key id state is kept under for id.
func KeyOf(id *policy.Identity) string {
	if id == nil {
		return ""
	}
	return id.KeyID
}

// ResolveHistory puts the stored conversation before the turn's input and
// replaces item references with the items they name.
func (s *State) ResolveHistory(ctx context.Context, id *policy.Identity, t *providers.ResponsesTurn) error {
	rs := s.store()
	// The store's calls share one timeout, started at the first: most
	// turns name no history and make none, nor a timer.
	var stored context.Context
	cancel := context.CancelFunc(func() {})
	defer func() { cancel() }()
	storeCtx := func() context.Context {
		if stored == nil {
			stored, cancel = context.WithTimeout(ctx, Timeout)
		}
		return stored
	}
	if prev := t.Req.PreviousResponseID; prev != nil {
		notFound := &providers.APIError{Status: http.StatusBadRequest, Param: "previous_response_id", Code: "previous_response_not_found",
			Message: fmt.Sprintf("Previous response with id %q not found.", *prev)}
		if rs == nil {
			return notFound
		}
		chain, err := rs.ResponseChain(storeCtx(), KeyOf(id), *prev)
		switch {
		case errors.Is(err, ledger.ErrResponseNotFound):
			return notFound
		case err != nil:
			return Unavailable(err)
		}
		var history []json.RawMessage
		for _, resp := range chain {
			for _, list := range []json.RawMessage{resp.Input, resp.Output} {
				var items []json.RawMessage
				if json.Unmarshal(list, &items) == nil {
					history = append(history, items...)
				}
			}
		}
		t.Prepend(history)
	}
	if t.ConversationID != "" {
		items, apiErr := s.conversationHistory(storeCtx(), KeyOf(id), t.ConversationID)
		if apiErr != nil {
			return apiErr
		}
		t.Prepend(items)
	}
	var lookupErr error
	err := t.ResolveReferences(func(itemID string) (json.RawMessage, bool) {
		if rs == nil {
			return nil, false
		}
		item, err := rs.Item(storeCtx(), KeyOf(id), itemID)
		if err != nil && !errors.Is(err, ledger.ErrResponseNotFound) {
			lookupErr = err
		}
		return item, err == nil
	})
	if lookupErr != nil {
		return Unavailable(lookupErr)
	}
	return err
}

// Unavailable is the error for a store that cannot be read.
func Unavailable(error) *providers.APIError {
	return &providers.APIError{Status: http.StatusServiceUnavailable,
		Message: "stored responses cannot be read right now (the ledger database is unavailable); retry, or send the history in input with store: false"}
}

// Keep stores a finished response the client asked to keep, before the
// client has its end: the next turn may refer to it at once. A turn of a
// conversation adds its items to it.
func (s *State) Keep(id *policy.Identity, info providers.RequestInfo, rec *ledger.Record) {
	if t, ok := info.Turn.(*providers.ResponsesTurn); ok {
		s.appendTurn(id, t)
	}
	t := info.KeptResponse()
	if t == nil {
		return
	}
	rs := s.store()
	if rs == nil {
		return
	}
	input, output := marshalRawList(t.NewItems), marshalRawList(t.Output)
	response := t.Response
	if s.Redact != nil {
		output = s.Redact(id, t.Alias, rec, output)
		response = s.Redact(id, t.Alias, rec, response)
	}
	prev := ""
	if t.Req.PreviousResponseID != nil {
		prev = *t.Req.PreviousResponseID
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	err := rs.PutResponse(ctx, ledger.StoredResponse{ID: t.ID, KeyID: KeyOf(id), PreviousID: prev,
		Model: t.Alias, Created: time.Unix(t.Created, 0), Input: input, Output: output, Response: response})
	if err != nil {
		s.report(t.Alias, "response_store: "+err.Error())
	}
}

// StoredStatus is a stored Response's status.
func StoredStatus(resp json.RawMessage) string {
	var s struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(resp, &s)
	return s.Status
}
