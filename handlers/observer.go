package handlers

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Attempt describes one upstream call made for a request, for logs and
// metrics. It never carries keys, prompts or URLs.
type Attempt struct {
	Alias      string
	Deployment string // modellist.Deployment.ID
	Provider   string
	Upstream   string // upstream model name
	Status     int    // upstream HTTP status; 0 when no response arrived
	Err        string // short error class when Status is 0 or the stream broke
	Retrying   bool   // another deployment will be tried
	Duration   time.Duration
}

// Observer receives what the gateway did. The Caddy module turns it into
// access-log fields, log lines and Prometheus metrics; tests record it.
// Methods are called on the request path and must not block.
type Observer interface {
	Attempt(a Attempt)
	Done(rec *ledger.Record)
}

// Recorder accepts finished requests for the ledger without blocking.
type Recorder interface {
	Enqueue(rec ledger.Record) bool
}

// Committer is a Recorder that can also write a record and wait until it
// is in the database, for `durability sync`.
type Committer interface {
	Commit(ctx context.Context, rec ledger.Record) error
}

type nopObserver struct{}

func (nopObserver) Attempt(Attempt)     {}
func (nopObserver) Done(*ledger.Record) {}
