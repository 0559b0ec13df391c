package ledger

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/money"
)

// UsageReportPage is the JSON body of GET /v1/organizations/usage_report/messages.
type UsageReportPage struct {
	Data     []UsageBucket `json:"data"`
	HasMore  bool          `json:"has_more"`
	NextPage *string       `json:"next_page"`
}

// UsageBucket is one time bucket; Results is [] when nothing was used.
type UsageBucket struct {
	StartingAt string        `json:"starting_at"`
	EndingAt   string        `json:"ending_at"`
	Results    []UsageResult `json:"results"`
}

// UsageResult is one group's usage. Dimension fields are null unless the
// query grouped by them; the ledger never knows inference_geo or the OAuth
// account fields, so they are always null.
type UsageResult struct {
	UncachedInputTokens  int64         `json:"uncached_input_tokens"`
	CacheCreation        CacheCreation `json:"cache_creation"`
	CacheReadInputTokens int64         `json:"cache_read_input_tokens"`
	OutputTokens         int64         `json:"output_tokens"`
	ServerToolUse        ServerToolUse `json:"server_tool_use"`
	Model                *string       `json:"model"`
	APIKeyID             *string       `json:"api_key_id"`
	WorkspaceID          *string       `json:"workspace_id"`
	ServiceTier          *string       `json:"service_tier"`
	ContextWindow        *string       `json:"context_window"`
	InferenceGeo         *string       `json:"inference_geo"`
	AccountID            *string       `json:"account_id"`
	ServiceAccountID     *string       `json:"service_account_id"`
	// Requests is the gateway's extension: the requests in the row that
	// used tokens (those that failed before using any are not usage, as
	// above). Anthropic's report has no such field; its clients ignore
	// fields they do not know.
	Requests int64 `json:"requests"`
	// CacheReadShare is the gateway's extension: cache_read_input_tokens
	// over every input token of the row (uncached, cache writes and cache
	// reads), 0 to 1. A coding agent whose cache works reads most of its
	// prompt from it; a share near 0 with large cache writes is a cache
	// written and lost, billed at the write premium every turn.
	CacheReadShare float64 `json:"cache_read_share"`
	// UpstreamModel is the gateway's extension, with group_by[]=upstream_model
	// only: the backend's model that answered the alias (model), which a
	// fallback makes another alias's. Anthropic's report has no such
	// dimension; left out when not grouped by it.
	UpstreamModel *string `json:"upstream_model,omitempty"`
}

// CacheReadShare is read over the whole input (uncached, cache writes and
// cache reads), rounded to four decimals; 0 when there was no input.
func CacheReadShare(uncached, writes, read int64) float64 {
	total := float64(uncached) + float64(writes) + float64(read)
	if total <= 0 || read <= 0 {
		return 0
	}
	return math.Round(float64(read)/total*1e4) / 1e4
}

// CacheCreation is cache writes by TTL.
type CacheCreation struct {
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
}

// ServerToolUse counts server-side tool calls; the gateway runs none.
type ServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests"`
}

// CostReportPage is the JSON body of GET /v1/organizations/cost_report.
type CostReportPage struct {
	Data     []CostBucket `json:"data"`
	HasMore  bool         `json:"has_more"`
	NextPage *string      `json:"next_page"`
}

// CostBucket is one day of cost.
type CostBucket struct {
	StartingAt string       `json:"starting_at"`
	EndingAt   string       `json:"ending_at"`
	Results    []CostResult `json:"results"`
}

// CostResult is one group's cost. Amount is a decimal string in cents of
// Currency. Fields other than amount and currency are null unless the
// query grouped by description (or workspace_id, for WorkspaceID).
type CostResult struct {
	Amount        string  `json:"amount"`
	Currency      string  `json:"currency"`
	CostType      *string `json:"cost_type"`
	Description   *string `json:"description"`
	Model         *string `json:"model"`
	TokenType     *string `json:"token_type"`
	ServiceTier   *string `json:"service_tier"`
	ContextWindow *string `json:"context_window"`
	InferenceGeo  *string `json:"inference_geo"`
	WorkspaceID   *string `json:"workspace_id"`
	// APIKeyID is the gateway's extension: set only when the query grouped
	// by api_key_id, left out otherwise.
	APIKeyID *string `json:"api_key_id,omitempty"`
}

// page is the bucket range one response covers.
type page struct {
	start, end time.Time
	n          int
	next       *string
}

func (q *ReportQuery) page() page {
	p := page{start: q.Start}
	if !q.Page.IsZero() {
		p.start = q.Page
	}
	remaining := 0
	if q.End.After(p.start) {
		remaining = int(q.End.Sub(p.start) / q.Width)
	}
	p.n = min(q.Limit, remaining)
	p.end = p.start.Add(time.Duration(p.n) * q.Width)
	if p.n < remaining {
		tok := encodePage(p.end)
		p.next = &tok
	}
	return p
}

func (q *ReportQuery) grouped(dim string) bool { return slices.Contains(q.GroupBy, dim) }

// usageDims maps the usage report's group_by values to ledger columns.
func (q *ReportQuery) usageDims() []Dimension {
	var dims []Dimension
	for _, g := range q.GroupBy {
		switch g {
		case "model":
			dims = append(dims, DimAlias)
		case "api_key_id":
			dims = append(dims, DimKeyID)
		case "workspace_id":
			dims = append(dims, DimWorkspace)
		case "service_tier":
			dims = append(dims, DimServiceTier)
		case "context_window":
			dims = append(dims, DimContextWindow)
		case "upstream_model":
			dims = append(dims, DimUpstreamModel)
		}
	}
	return dims
}

// priorityTiers are billed outside the cost report.
func priorityTiers() []string { return []string{"priority", "priority_on_demand"} }

// usageKey identifies a result within a bucket; a nil pointer is a null
// (ungrouped, or unknown) dimension.
type usageKey struct {
	model, key, workspace, tier, window, upstream optString
}

// optString is a comparable nullable string for map keys.
type optString struct {
	s     string
	valid bool
}

func opt(grouped bool, s string) optString {
	if !grouped || s == "" {
		return optString{}
	}
	return optString{s: s, valid: true}
}

func (o optString) ptr() *string {
	if !o.valid {
		return nil
	}
	s := o.s
	return &s
}

func (o optString) compare(p optString) int {
	if o.valid != p.valid {
		if !o.valid {
			return -1 // nulls first
		}
		return 1
	}
	return strings.Compare(o.s, p.s)
}

func tierOf(tier string) string {
	if tier == "" {
		return "standard"
	}
	return tier
}

// UsageReport answers one page of the usage report from the store.
func UsageReport(ctx context.Context, s Store, q ReportQuery) (*UsageReportPage, error) {
	p := q.page()
	out := &UsageReportPage{Data: make([]UsageBucket, p.n), HasMore: p.next != nil, NextPage: p.next}
	if p.n == 0 {
		return out, nil
	}
	rows, err := s.Aggregate(ctx, Filter{
		From: p.start, To: p.end,
		Models: q.Models, APIKeyIDs: q.APIKeyIDs, WorkspaceIDs: q.WorkspaceIDs,
		ServiceTiers: q.ServiceTiers, ContextWindows: q.ContextWindows,
	}, q.Width, q.usageDims())
	if err != nil {
		return nil, err
	}
	groups := make([]map[usageKey]*UsageResult, p.n)
	gModel, gKey, gWS, gTier, gWin, gUp := q.grouped("model"), q.grouped("api_key_id"),
		q.grouped("workspace_id"), q.grouped("service_tier"), q.grouped("context_window"), q.grouped("upstream_model")
	for i := range rows {
		r := &rows[i]
		if r.InputTokens == 0 && r.OutputTokens == 0 && r.CacheReadTokens == 0 &&
			r.CacheCreation5m == 0 && r.CacheCreation1h == 0 {
			continue // requests that failed before using anything are not usage
		}
		b := bucketIndex(r.Bucket, p.start, q.Width, p.n)
		if b < 0 {
			continue
		}
		k := usageKey{
			model:     opt(gModel, r.Alias),
			key:       opt(gKey, r.KeyID),
			workspace: opt(gWS, r.Workspace),
			tier:      opt(gTier, tierOf(r.ServiceTier)),
			window:    opt(gWin, r.ContextWindow),
			upstream:  opt(gUp, r.UpstreamModel),
		}
		if groups[b] == nil {
			groups[b] = make(map[usageKey]*UsageResult)
		}
		res := groups[b][k]
		if res == nil {
			res = &UsageResult{Model: k.model.ptr(), APIKeyID: k.key.ptr(), WorkspaceID: k.workspace.ptr(),
				ServiceTier: k.tier.ptr(), ContextWindow: k.window.ptr(), UpstreamModel: k.upstream.ptr()}
			groups[b][k] = res
		}
		addSat(&res.UncachedInputTokens, r.InputTokens)
		addSat(&res.CacheCreation.Ephemeral5m, r.CacheCreation5m)
		addSat(&res.CacheCreation.Ephemeral1h, r.CacheCreation1h)
		addSat(&res.CacheReadInputTokens, r.CacheReadTokens)
		addSat(&res.OutputTokens, r.OutputTokens)
		addSat(&res.Requests, r.Requests)
	}
	for i := range out.Data {
		bs := p.start.Add(time.Duration(i) * q.Width)
		out.Data[i] = UsageBucket{StartingAt: formatTime(bs), EndingAt: formatTime(bs.Add(q.Width)),
			Results: make([]UsageResult, 0, len(groups[i]))}
		keys := make([]usageKey, 0, len(groups[i]))
		for k := range groups[i] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b usageKey) int {
			return cmp.Or(a.model.compare(b.model), a.key.compare(b.key), a.workspace.compare(b.workspace),
				a.tier.compare(b.tier), a.window.compare(b.window), a.upstream.compare(b.upstream))
		})
		for _, k := range keys {
			res := groups[i][k]
			res.CacheReadShare = CacheReadShare(res.UncachedInputTokens, res.CacheCreation.Ephemeral5m+res.CacheCreation.Ephemeral1h, res.CacheReadInputTokens)
			out.Data[i].Results = append(out.Data[i].Results, *res)
		}
	}
	return out, nil
}

// Token types of the cost report, in the order results list them.
const (
	tokenUncached = "uncached_input_tokens"
	tokenOutput   = "output_tokens"
	tokenRead     = "cache_read_input_tokens"
	tokenWrite1h  = "cache_creation.ephemeral_1h_input_tokens"
	tokenWrite5m  = "cache_creation.ephemeral_5m_input_tokens"
	// costReported is the cost no token price explains: what coding agents
	// reported of requests the gateway did not serve (agent_reported
	// records carry no prices). Its own line, cost_type agent_reported,
	// so a report never passes a client's word off as priced usage.
	costReported = "agent_reported"
)

type costKey struct {
	workspace, key optString
	// Set only when grouping by description.
	model, display, tokenType, tier, window optString
	order                                   int // token type order within a model
}

// CostReport answers one page of the cost report from the store. Cost is
// what the ledger computed from token counts and prices; Priority Tier
// usage is left out, as the provider bills it outside this report.
func CostReport(ctx context.Context, s Store, q ReportQuery) (*CostReportPage, error) {
	p := q.page()
	out := &CostReportPage{Data: make([]CostBucket, p.n), HasMore: p.next != nil, NextPage: p.next}
	if p.n == 0 {
		return out, nil
	}
	var dims []Dimension
	if q.grouped("workspace_id") {
		dims = append(dims, DimWorkspace)
	}
	if q.grouped("api_key_id") {
		dims = append(dims, DimKeyID)
	}
	if q.grouped("description") {
		dims = append(dims, DimAlias, DimUpstreamModel, DimServiceTier, DimContextWindow)
	}
	rows, err := s.Aggregate(ctx, Filter{From: p.start, To: p.end, APIKeyIDs: q.APIKeyIDs, ExcludeServiceTiers: priorityTiers()}, q.Width, dims)
	if err != nil {
		return nil, err
	}
	gWS, gDesc, gKey := q.grouped("workspace_id"), q.grouped("description"), q.grouped("api_key_id")
	sums := make([]map[costKey]int64, p.n)
	add := func(b int, k costKey, pico int64) {
		if pico == 0 {
			return
		}
		if sums[b] == nil {
			sums[b] = make(map[costKey]int64)
		}
		v := sums[b][k]
		addSat(&v, pico)
		sums[b][k] = v
	}
	for i := range rows {
		r := &rows[i]
		b := bucketIndex(r.Bucket, p.start, q.Width, p.n)
		if b < 0 {
			continue
		}
		ws, key := opt(gWS, r.Workspace), opt(gKey, r.KeyID)
		if !gDesc {
			add(b, costKey{workspace: ws, key: key}, r.CostPicoUSD)
			continue
		}
		base := costKey{workspace: ws, key: key, model: opt(true, r.Alias), display: opt(true, displayName(r.UpstreamModel, r.Alias)),
			tier: opt(true, tierOf(r.ServiceTier)), window: opt(true, r.ContextWindow)}
		parts := [...]struct {
			tokenType string
			pico      int64
		}{
			{tokenUncached, r.CostInput},
			{tokenOutput, r.CostOutput},
			{tokenRead, r.CostCacheRead},
			{tokenWrite1h, r.CostCacheWrite1h},
			{tokenWrite5m, r.CostCacheWrite5m},
		}
		priced := int64(0)
		for order, part := range parts {
			k := base
			k.tokenType = opt(true, part.tokenType)
			k.order = order
			add(b, k, part.pico)
			addSat(&priced, part.pico)
		}
		if r.CostPicoUSD > priced {
			k := base
			k.tokenType, k.order = opt(true, costReported), len(parts)
			add(b, k, r.CostPicoUSD-priced)
		}
	}
	for i := range out.Data {
		bs := p.start.Add(time.Duration(i) * q.Width)
		out.Data[i] = CostBucket{StartingAt: formatTime(bs), EndingAt: formatTime(bs.Add(q.Width)),
			Results: make([]CostResult, 0, len(sums[i]))}
		keys := make([]costKey, 0, len(sums[i]))
		for k := range sums[i] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b costKey) int {
			return cmp.Or(a.workspace.compare(b.workspace), a.key.compare(b.key), a.model.compare(b.model),
				a.tier.compare(b.tier), a.window.compare(b.window), cmp.Compare(a.order, b.order))
		})
		for _, k := range keys {
			res := CostResult{Amount: formatCents(sums[i][k]), Currency: "USD", WorkspaceID: k.workspace.ptr(), APIKeyID: k.key.ptr()}
			if gDesc {
				tokens := "tokens"
				desc := k.display.s + " Usage - " + tokenTypeLabel(k.tokenType.s)
				res.CostType, res.Description = &tokens, &desc
				res.Model, res.TokenType = k.model.ptr(), k.tokenType.ptr()
				if k.tokenType.s == costReported {
					reported := costReported
					res.CostType, res.TokenType = &reported, nil
				}
				res.ServiceTier, res.ContextWindow = k.tier.ptr(), k.window.ptr()
			}
			out.Data[i].Results = append(out.Data[i].Results, res)
		}
	}
	return out, nil
}

func bucketIndex(t, start time.Time, width time.Duration, n int) int {
	if t.Before(start) {
		return -1
	}
	b := int(t.Sub(start) / width)
	if b >= n {
		return -1
	}
	return b
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// addSat adds n (never negative: the store clamps) to *sum, stopping at
// the largest int64 instead of wrapping to a negative total.
func addSat(sum *int64, n int64) {
	if n > 0 && *sum > math.MaxInt64-n {
		*sum = math.MaxInt64
		return
	}
	*sum += n
}

// ShortCents renders picodollars as cents rounded down to three decimals,
// without trailing zeros ("1234", "12.5"): the short form of the session
// and budget views, where formatCents's exactness would be noise. A
// negative amount is shown as 0.
func ShortCents(pico int64) string {
	pico = max(pico, 0)
	whole, frac := pico/money.PicoPerCent, (pico%money.PicoPerCent)/1e7
	if frac == 0 {
		return strconv.FormatInt(whole, 10)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%03d", whole, frac), "0")
}

// formatCents renders picodollars as the report's decimal cents string:
// exact, no exponent, at least one fractional digit ("1260.0").
func formatCents(pico int64) string {
	neg := pico < 0
	if neg {
		pico = -pico
	}
	frac := strconv.FormatInt(pico%money.PicoPerCent+money.PicoPerCent, 10)[1:] // zero-padded to 10 digits
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		frac = "0"
	}
	s := strconv.FormatInt(pico/money.PicoPerCent, 10) + "." + frac
	if neg {
		s = "-" + s
	}
	return s
}

func tokenTypeLabel(t string) string {
	switch t {
	case tokenOutput:
		return "Output Tokens"
	case tokenRead:
		return "Input Tokens, Cache Hit"
	case tokenWrite1h, tokenWrite5m:
		return "Input Tokens, Cache Write"
	case costReported:
		return "Agent-Reported Cost"
	}
	return "Input Tokens"
}

// displayName is the model's name in cost descriptions: Anthropic's own
// style for claude-* models ("claude-sonnet-4-5-20250929" → "Claude Sonnet
// 4.5"), the upstream name otherwise.
func displayName(upstreamModel, alias string) string {
	m := upstreamModel
	if m == "" {
		m = alias
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if !strings.HasPrefix(m, "claude-") {
		return m
	}
	m, _, _ = strings.Cut(m, "@") // Vertex snapshots: claude-sonnet-4-5@20250929
	var words []string
	var version []string
	flush := func() {
		if len(version) > 0 {
			words = append(words, strings.Join(version, "."))
			version = nil
		}
	}
	for _, part := range strings.Split(m, "-") {
		switch {
		case part == "":
		case len(part) == 8 && isDigits(part), part == "latest":
			// a snapshot date or alias suffix is not part of the name
		case isDigits(part):
			version = append(version, part)
		default:
			flush()
			words = append(words, strings.ToUpper(part[:1])+part[1:])
		}
	}
	flush()
	return strings.Join(words, " ")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
