package agentotel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/modelgate/modelgate/ledger"
)

// Options configures a Receiver.
type Options struct {
	// Caller names the authenticated key and its workspace; ok false
	// answers 401 (the gateway's auth runs first, so this is a backstop).
	Caller func(r *http.Request) (keyID, workspace string, ok bool)
	// Record takes a record for the ledger without blocking; false means
	// the ledger's queue is full (503, the exporter retries).
	Record func(ledger.Record) bool
	// Served reports whether the gateway itself served requests of the
	// session: its agent-reported requests are then dropped, because the
	// gateway's own records already count them. nil: nothing is dropped.
	Served func(ctx context.Context, sessionID string) (bool, error)
	// Person names the person the caller's key was minted for (or who
	// signed in) and their matched groups, one per line, from the context
	// the gateway's auth left: a counted cost is theirs as much as the
	// key's, so their spend limits count it (one sum whatever key the
	// agent reports with). nil: the key's and workspace's only.
	Person func(ctx context.Context) (person, groups string)
	// Counted reports whether the workspace's budgets count the costs its
	// agents report (an admin's per-workspace choice); nil or false: the
	// records are reports only (ledger.Record.ReportOnly), because the
	// cost is the client's own word.
	Counted func(workspace string) bool
	// ListPrices are the prices that bound a counted cost: the models
	// file's prices of the model the event names, or the most expensive
	// known ones when it names none the gateway knows. nil: a counted
	// cost is bounded to 0.
	ListPrices func(model string) ledger.Prices
	// Metrics keeps the work metrics of an export (CodeMetrics) under the
	// caller's key; an error answers 503, so the exporter retries. nil:
	// metrics are only acknowledged.
	Metrics func(ctx context.Context, keyID string, pts []ledger.AgentMetric) error
	// MaxBody bounds an export's decoded size. Default 8 MiB.
	MaxBody int64
	Now     func() time.Time
}

// Receiver serves POST /v1/logs and POST /v1/metrics for coding agents.
type Receiver struct {
	o    Options
	seen recentSessions
}

// Saw notes that this instance is serving a request of session: the
// agent's own report of it, which can arrive before the gateway's record
// is written, is then known to be a duplicate at once.
func (rc *Receiver) Saw(session string) { rc.seen.add(session, rc.o.Now()) }

// recentSessions is a two-generation set of the sessions served here:
// bounded in size, each kept between one and two generations.
type recentSessions struct {
	mu        sync.Mutex
	cur, prev map[string]struct{}
	started   time.Time
}

// A generation ends after an hour or 65,536 sessions.
const (
	generationAge  = time.Hour
	generationSize = 1 << 16
)

func (s *recentSessions) add(session string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || len(s.cur) >= generationSize || now.Sub(s.started) > generationAge {
		s.prev, s.cur, s.started = s.cur, make(map[string]struct{}), now
	}
	s.cur[session] = struct{}{}
}

func (s *recentSessions) has(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, a := s.cur[session]
	_, b := s.prev[session]
	return a || b
}

// NewReceiver returns a receiver with o's defaults filled in.
func NewReceiver(o Options) *Receiver {
	if o.MaxBody <= 0 {
		o.MaxBody = 8 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Receiver{o: o}
}

// Result is what one logs export did to the ledger.
type Result struct {
	Recorded, Duplicates, Rejected int
}

// ServeLogs answers an OTLP/HTTP logs export.
func (rc *Receiver) ServeLogs(w http.ResponseWriter, r *http.Request) {
	enc, b, key, ws, ok := rc.read(w, r)
	if !ok {
		return
	}
	req, err := DecodeLogs(b, enc)
	if err != nil {
		writeStatus(w, enc, http.StatusBadRequest, err.Error())
		return
	}
	res, msg, status := rc.Logs(r.Context(), req, key, ws)
	if status != http.StatusOK {
		writeStatus(w, enc, status, msg)
		return
	}
	resp := &collogs.ExportLogsServiceResponse{}
	if res.Rejected > 0 {
		resp.PartialSuccess = &collogs.ExportLogsPartialSuccess{RejectedLogRecords: int64(res.Rejected), ErrorMessage: msg}
	}
	writeMessage(w, enc, http.StatusOK, resp)
}

// Logs records the api_request events of req under the caller's key and
// returns what it did, the partial-success message and an HTTP status.
// An event of a session the gateway served itself is a duplicate and is
// dropped: the gateway's record of the same request is the authoritative
// one (its tokens come from the provider's answer, its cost from the
// models file's prices).
func (rc *Receiver) Logs(ctx context.Context, req *collogs.ExportLogsServiceRequest, keyID, workspace string) (Result, string, int) {
	ex := APIRequests(req)
	res := Result{Rejected: ex.Rejected}
	served := map[string]bool{}
	now := rc.o.Now().UTC()
	counted := rc.o.Counted != nil && rc.o.Counted(workspace)
	var person, groups string
	if rc.o.Person != nil {
		person, groups = rc.o.Person(ctx)
	}
	for _, ev := range ex.Requests {
		dup, seen := served[ev.SessionID]
		if !seen && rc.seen.has(ev.SessionID) {
			dup, seen = true, true
			served[ev.SessionID] = true
		}
		if !seen && rc.o.Served != nil {
			var err error
			if dup, err = rc.o.Served(ctx, ev.SessionID); err != nil {
				// Unknown: asking the exporter to retry is better than
				// counting a request twice.
				return res, "the usage ledger cannot be read; retry later", http.StatusServiceUnavailable
			}
			served[ev.SessionID] = dup
		}
		if dup {
			res.Duplicates++
			continue
		}
		rec := ev.Record(keyID, workspace, now)
		rec.Person, rec.Groups = person, groups
		if counted {
			rc.bound(&rec)
		}
		if rc.o.Record != nil && !rc.o.Record(rec) {
			return res, "the usage ledger's queue is full; retry later", http.StatusServiceUnavailable
		}
		res.Recorded++
	}
	return res, ex.Reason, http.StatusOK
}

// MaxCountedReport is the most one counted report (one agent-reported
// request) adds to any spend, in picodollars ($100): its tokens are the
// client's word, up to 2^31 each, and it is charged to the person's
// groups and the organization too, so without this one export could
// use up a limit shared by everyone. More than any one request of a
// coding agent costs at list price.
const MaxCountedReport = 100 * 1_000_000_000_000

// bound makes rec count against budgets at no more than its tokens cost
// at list price, and no more than MaxCountedReport: a client may report
// less than that (a discount the gateway does not know), never more.
func (rc *Receiver) bound(rec *ledger.Record) {
	var p ledger.Prices
	if rc.o.ListPrices != nil {
		p = rc.o.ListPrices(rec.UpstreamModel)
	}
	rec.CostPicoUSD = min(rec.CostPicoUSD, p.Cost(rec), MaxCountedReport)
	rec.ReportOnly = false
}

// ServeMetrics answers an OTLP/HTTP metrics export. Usage metrics are
// acknowledged, not recorded: claude_code.token.usage and
// claude_code.cost.usage are sums of the same requests the api_request
// events report one by one, so recording both would count them twice.
// The work metrics no request shows (lines of code, commits, pull
// requests, edit decisions) go to Options.Metrics.
func (rc *Receiver) ServeMetrics(w http.ResponseWriter, r *http.Request) {
	enc, b, key, _, ok := rc.read(w, r)
	if !ok {
		return
	}
	req, err := DecodeMetrics(b, enc)
	if err != nil {
		writeStatus(w, enc, http.StatusBadRequest, err.Error())
		return
	}
	if rc.o.Metrics != nil {
		if pts := CodeMetrics(req, rc.o.Now().UTC()); len(pts) > 0 {
			if err := rc.o.Metrics(r.Context(), key, pts); err != nil {
				writeStatus(w, enc, http.StatusServiceUnavailable, "the usage ledger cannot be written; retry later")
				return
			}
		}
	}
	writeMessage(w, enc, http.StatusOK, &colmetrics.ExportMetricsServiceResponse{})
}

func (rc *Receiver) read(w http.ResponseWriter, r *http.Request) (Encoding, []byte, string, string, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, JSON, http.StatusMethodNotAllowed, "OTLP/HTTP exports are POSTed")
		return 0, nil, "", "", false
	}
	enc, err := EncodingOf(r.Header.Get("Content-Type"))
	if err != nil {
		writeStatus(w, JSON, http.StatusUnsupportedMediaType, err.Error())
		return 0, nil, "", "", false
	}
	key, ws, ok := "", "", true
	if rc.o.Caller != nil {
		key, ws, ok = rc.o.Caller(r)
	}
	if !ok {
		writeStatus(w, enc, http.StatusUnauthorized, "missing API key: send the gateway key in OTEL_EXPORTER_OTLP_HEADERS (Authorization=Bearer <key>)")
		return 0, nil, "", "", false
	}
	b, err := ReadBody(r.Body, r.Header.Get("Content-Encoding"), rc.o.MaxBody)
	if errors.Is(err, ErrTooLarge) {
		writeStatus(w, enc, http.StatusRequestEntityTooLarge, fmt.Sprintf("export exceeds the limit of %d bytes; lower the exporter's batch size", rc.o.MaxBody))
		return 0, nil, "", "", false
	}
	if err != nil {
		writeStatus(w, enc, http.StatusBadRequest, err.Error())
		return 0, nil, "", "", false
	}
	return enc, b, key, ws, true
}

// writeStatus answers an error as OTLP/HTTP says: a google.rpc.Status in
// the request's encoding.
func writeStatus(w http.ResponseWriter, enc Encoding, status int, msg string) {
	code := int32(3) // INVALID_ARGUMENT
	switch status {
	case http.StatusUnauthorized:
		code = 16 // UNAUTHENTICATED
	case http.StatusServiceUnavailable:
		code = 14 // UNAVAILABLE
		w.Header().Set("Retry-After", "5")
	case http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		code = 12 // UNIMPLEMENTED
	case http.StatusRequestEntityTooLarge:
		code = 8 // RESOURCE_EXHAUSTED
	}
	writeMessage(w, enc, status, &spb.Status{Code: code, Message: msg})
}

func writeMessage(w http.ResponseWriter, enc Encoding, status int, m proto.Message) {
	var b []byte
	if enc == JSON {
		b, _ = protojson.Marshal(m)
		w.Header().Set("Content-Type", "application/json")
	} else {
		b, _ = proto.Marshal(m)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
