// Package batch serves the batch APIs on every backend: Anthropic's
// Message Batches (/v1/messages/batches) and OpenAI's Files and Batch
// (/v1/files, /v1/batches). Batches, their items and files live in the
// ledger database (ledger.BatchStore), so any instance on it answers a
// poll, a list, a cancel or a results download; a worker on every
// instance claims items under a lease and runs each as a request of the
// gateway itself (Runner), at low priority within the key's limits.
//
// It knows no transport beyond its own HTTP answers: the item runner is an
// interface the gateway implements, so it can be pointed at any core that
// serves one request.
package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Runner serves one batch item as a request of the gateway: the key's
// budgets and rate limits, the alias's chain, one ledger record. path is
// the endpoint the item is served as (/v1/messages, /v1/chat/completions,
// /v1/embeddings, /v1/responses) and body its JSON request, never a
// stream. It returns the answer as a client would have had it.
type Runner interface {
	RunItem(ctx context.Context, id *policy.Identity, path string, body []byte) Answer
}

// Answer is a served item: its status, body and, for a refusal a later
// try may pass (429, 503), how long to wait. Final marks a refusal only
// time cures (a spent budget: x-should-retry false), which ends the item
// instead of holding it until the budget's period resets.
type Answer struct {
	Status     int
	Body       []byte
	RetryAfter time.Duration
	Final      bool
}

// Options configure a Service. Store and Runner are required.
type Options struct {
	// Store is the ledger's batch store, nil while the ledger is not open.
	Store  func() ledger.BatchStore
	Runner Runner
	// Site names the site (its llm_auth and llm_gateway) this service
	// answers for: its batches, items and files are stored under it, and
	// its worker claims only its items.
	Site string
	// Identify is the key keyID, of this site, as a request presenting it
	// would be admitted now (revoked, expired, archived: a refusal); nil takes
	// every key as it was at create, with no limits of its own.
	Identify func(keyID string) (*policy.Identity, *apierror.Error)
	// Allows reports whether id may use the model an item names; nil
	// leaves it to the run.
	Allows func(id *policy.Identity, model string) bool
	// Screen passes each input through the secret firewall before it is
	// stored (screen.go); nil stores inputs as sent.
	Screen Screener
	// ScreenID reports the firewall rule a request's custom_id matches
	// for model ("" when none, or when the model's action keeps what is
	// sent); nil checks no id (screen.go).
	ScreenID func(id *policy.Identity, model, customID string) (rule string)
	// ScreenAnswer passes a passed-through request's answer (in the
	// batch's endpoint's format) through the secret firewall before it is
	// stored, as the answers of requests the gateway runs itself are;
	// nil: stored as the provider gave it.
	ScreenAnswer func(id *policy.Identity, alias, endpoint string, answer []byte) []byte
	// Retention is how long a batch's results are kept after it ended,
	// and uploaded files after their upload. Default DefaultRetention.
	Retention time.Duration
	// Workers is how many items this instance runs at once. Default
	// DefaultWorkers.
	Workers int
	// MaxBytes bounds an uploaded file and a create request's body.
	// Default DefaultMaxBytes.
	MaxBytes int64
	// MaxItems bounds the requests of one batch. Default DefaultMaxItems.
	MaxItems int
	// Memory, when set, is the gateway's body memory, which a batch's
	// input counts against while it is read, decoded and stored; nil:
	// only MaxBytes bounds it.
	Memory Memory
	// Passthrough, when set, sends a batch whose requests all go to one
	// upstream with a batch API to that API (passthrough.go); nil: the
	// gateway runs every batch.
	Passthrough Passthrough
	// ProviderPrice is the fraction of the list price a provider's batch
	// costs, for holds and records. Default DefaultProviderPrice.
	ProviderPrice float64
	// PollCache is how long a provider's answer to a poll of a
	// passed-through batch is reused. Default 1 second.
	PollCache time.Duration
	// CheckEvery is how often the worker polls a passed-through batch no
	// client polled, so that it settles without one. Default 30 seconds.
	CheckEvery time.Duration
	// Failed hears store failures of the worker, which retries them.
	Failed func(what string, err error)
	Now    func() time.Time
}

// The defaults of Options.
const (
	// DefaultRetention is Anthropic's: results are available for 29 days.
	DefaultRetention = 29 * 24 * time.Hour
	DefaultWorkers   = 2
	DefaultMaxBytes  = 100 << 20
	DefaultMaxItems  = 50000
	// DefaultProviderPrice is Anthropic's and OpenAI's batch discount:
	// half the list price.
	DefaultProviderPrice = 0.5
	// completionWindow is both APIs' 24 hours: items not run by then end
	// expired.
	completionWindow = 24 * time.Hour
)

// Service answers the batch and file paths and runs the items.
type Service struct {
	o     Options
	owner string // this instance's name on the leases it takes
	wake  chan struct{}
	stop  context.CancelFunc
	done  sync.WaitGroup
	// The route tables of the three resources, built once.
	anthropic, files, openAI routes
}

// New returns a Service; Start begins its worker.
func New(o Options) *Service {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PollCache <= 0 {
		o.PollCache = pollCache
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = checkEvery
	}
	if o.Failed == nil {
		o.Failed = func(string, error) {}
	}
	s := &Service{o: o, owner: "inst_" + randomID(8), wake: make(chan struct{}, 1)}
	s.anthropic, s.files, s.openAI = s.anthropicRoutes(), s.fileRoutes(), s.openAIRoutes()
	return s
}

// Serves reports whether p is a path of the batch APIs.
func Serves(p string) bool {
	return under(p, "/v1/messages/batches") || under(p, "/v1/files") || under(p, "/v1/batches")
}

func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// ServeHTTP answers one call of either API, in that API's error family.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case under(p, "/v1/messages/batches"):
		s.anthropic.serve(w, r, strings.TrimPrefix(p, "/v1/messages/batches"))
	case under(p, "/v1/files"):
		s.files.serve(w, r, strings.TrimPrefix(p, "/v1/files"))
	default:
		s.openAI.serve(w, r, strings.TrimPrefix(p, "/v1/batches"))
	}
}

// store is the batch store, or the 503 that says the ledger is not open.
func (s *Service) store() (ledger.BatchStore, *apierror.Error) {
	if st := s.o.Store(); st != nil {
		return st, nil
	}
	return nil, &apierror.Error{Status: http.StatusServiceUnavailable, RetryAfter: "1",
		Message: "the ledger database is not open yet, and batches live there; retry shortly"}
}

// ownerOf is the caller's key on this site: batches and files are scoped
// to both, since a key id is unique only within a site's llm_auth.
func (s *Service) ownerOf(r *http.Request) (*policy.Identity, ledger.BatchOwner) {
	id := policy.IdentityFrom(r.Context())
	if id == nil {
		return nil, ledger.BatchOwner{Site: s.o.Site}
	}
	return id, ledger.BatchOwner{Site: s.o.Site, KeyID: id.KeyID}
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// storeError is a store failure as the caller sees it: a lookup's miss is
// a 404 naming what was looked up; anything else a 500 that names no
// database detail.
func storeError(err error, what, id string) *apierror.Error {
	switch err {
	case ledger.ErrBatchNotFound, ledger.ErrBatchFileNotFound:
		return &apierror.Error{Status: http.StatusNotFound, Code: "not_found",
			Message: "no " + what + " " + quoteID(id) + " for this key"}
	case ledger.ErrBatchRunning:
		return &apierror.Error{Status: http.StatusConflict,
			Message: what + " " + quoteID(id) + " has not ended; cancel it and delete it once it has ended"}
	}
	return &apierror.Error{Status: http.StatusInternalServerError,
		Message: "the ledger database failed reading or writing the " + what + "; retry"}
}

// quoteID bounds an id a caller sent before it is echoed.
func quoteID(id string) string {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return `"` + strings.ToValidUTF8(id, "?") + `"`
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// methodNotAllowed answers a method a path does not take.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, f apierror.Family, allow string) {
	w.Header().Set("Allow", allow)
	(&apierror.Error{Status: http.StatusMethodNotAllowed,
		Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use " + allow}).Write(w, f)
}

func notFound(w http.ResponseWriter, r *http.Request, f apierror.Family) {
	(&apierror.Error{Status: http.StatusNotFound, Code: "unknown_url",
		Message: "no endpoint for " + r.Method + " " + r.URL.Path + " on this gateway; see docs/batches.md"}).Write(w, f)
}

// limitInt reads a page size: def when absent, an error when out of
// [1, max].
func limitInt(r *http.Request, def, max int) (int, *apierror.Error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' || n > max {
			n = -1
			break
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > max {
		return 0, &apierror.Error{Status: http.StatusBadRequest, Param: "limit",
			Message: "limit: want a whole number from 1 to " + itoa(max)}
	}
	return n, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
