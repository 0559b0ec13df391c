package ledger

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReportQuery is a validated report request. Start and End are aligned to
// Width; the buckets are [Start, End) cut every Width.
type ReportQuery struct {
	Start, End time.Time
	Width      time.Duration
	Limit      int
	// Page is the first bucket of the requested page; zero for the first page.
	Page    time.Time
	GroupBy []string

	// Usage report filters; empty lists do not filter.
	Models, APIKeyIDs, WorkspaceIDs, ServiceTiers, ContextWindows []string
}

// ParamError is a bad report parameter; the handler answers it with 400
// invalid_request_error.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

func paramErr(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// ParseRawQuery reads a report's query string strictly. url.ParseQuery
// silently drops a pair holding a raw ';' (and r.URL.Query() hides the
// error), so a filter such as api_key_ids[]=a;b would vanish and the
// report widen to every key: here anything that cannot be read exactly
// is an error naming its parameter.
func ParseRawQuery(raw string) (url.Values, error) {
	v := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, paramErr(k, "the parameter name is not valid percent-encoding")
		}
		if strings.Contains(pair, ";") {
			return nil, paramErr(key, "contains ';', which is not a separator here: join parameters with '&', and percent-encode a ';' in a value as %%3B")
		}
		value, err := url.QueryUnescape(val)
		if err != nil {
			return nil, paramErr(key, "the value is not valid percent-encoding")
		}
		v[key] = append(v[key], value)
	}
	return v, nil
}

type widthLimits struct {
	width         time.Duration
	defLimit, max int
}

func usageWidth(s string) (widthLimits, bool) {
	switch s {
	case "1m":
		return widthLimits{time.Minute, 60, 1440}, true
	case "1h":
		return widthLimits{time.Hour, 24, 168}, true
	case "1d":
		return widthLimits{24 * time.Hour, 7, 31}, true
	}
	return widthLimits{}, false
}

func usageGroups() []string {
	return []string{"model", "api_key_id", "workspace_id", "service_tier", "context_window", "upstream_model"}
}

// costGroups: api_key_id is the gateway's extension (spend per key).
func costGroups() []string { return []string{"workspace_id", "description", "api_key_id"} }

func serviceTiers() []string {
	return []string{"standard", "batch", "priority", "priority_on_demand", "flex", "flex_discount"}
}

func contextWindows() []string { return []string{ContextWindowSmall, ContextWindowLarge} }

// unsupportedParams are documented parameters this ledger cannot answer:
// it records neither inference geography, speed, nor OAuth accounts.
func unsupportedParams() []string {
	return []string{"inference_geos", "speeds", "account_ids", "service_account_ids"}
}

// ParseUsageQuery validates the query of GET
// /v1/organizations/usage_report/messages. now sets the default end: the
// bucket holding now is the last one.
func ParseUsageQuery(v url.Values, now time.Time) (ReportQuery, error) {
	q, err := parseBucketed(v, now, usageGroups(), "models", "service_tiers", "context_window")
	if err != nil {
		return q, err
	}
	q.Models = list(v, "models")
	if q.ServiceTiers, err = enumList(v, "service_tiers", serviceTiers()); err != nil {
		return q, err
	}
	if q.ContextWindows, err = enumList(v, "context_window", contextWindows()); err != nil {
		return q, err
	}
	return q, nil
}

// parseBucketed parses what the messages usage report and the reports
// shaped like it share: the time range, 1m/1h/1d buckets, paging, group_by
// (one of groups), and the api_key_ids and workspace_ids filters. extra
// names the caller's further parameters, which it reads itself.
func parseBucketed(v url.Values, now time.Time, groups []string, extra ...string) (ReportQuery, error) {
	q := ReportQuery{}
	allowed := append([]string{"starting_at", "ending_at", "bucket_width", "limit", "page", "group_by", "api_key_ids", "workspace_ids"}, extra...)
	if err := checkNames(v, allowed); err != nil {
		return q, err
	}
	width, err := single(v, "bucket_width", "1d")
	if err != nil {
		return q, err
	}
	wl, ok := usageWidth(width)
	if !ok {
		return q, paramErr("bucket_width", "must be one of 1m, 1h, 1d, got %q", width)
	}
	if err := parseCommon(v, &q, width, wl, now); err != nil {
		return q, err
	}
	if q.GroupBy, err = enumList(v, "group_by", groups); err != nil {
		return q, err
	}
	q.APIKeyIDs = list(v, "api_key_ids")
	q.WorkspaceIDs = list(v, "workspace_ids")
	return q, nil
}

// ParseCostQuery validates the query of GET /v1/organizations/cost_report,
// which has only daily buckets, no filters, and groups by workspace_id and
// description only.
func ParseCostQuery(v url.Values, now time.Time) (ReportQuery, error) {
	q := ReportQuery{}
	allowed := []string{"starting_at", "ending_at", "bucket_width", "limit", "page", "group_by"}
	if err := checkNames(v, allowed); err != nil {
		return q, err
	}
	width, err := single(v, "bucket_width", "1d")
	if err != nil {
		return q, err
	}
	if width != "1d" {
		return q, paramErr("bucket_width", "the cost report supports only 1d, got %q", width)
	}
	wl, _ := usageWidth(width)
	if err := parseCommon(v, &q, width, wl, now); err != nil {
		return q, err
	}
	if q.GroupBy, err = enumList(v, "group_by", costGroups()); err != nil {
		return q, err
	}
	return q, nil
}

// checkNames refuses unknown parameters, so a misspelt filter cannot
// silently widen a report. Array parameters come as name[] or name; beta
// is the query flag Anthropic clients add to every path.
func checkNames(v url.Values, allowed []string) error {
	for name := range v {
		base := strings.TrimSuffix(name, "[]")
		if base == "beta" || slices.Contains(allowed, base) {
			continue
		}
		if slices.Contains(unsupportedParams(), base) {
			return paramErr(name, "not supported by the gateway's ledger (use proxy mode for the provider's report)")
		}
		return paramErr(name, "unknown parameter")
	}
	return nil
}

func parseCommon(v url.Values, q *ReportQuery, width string, wl widthLimits, now time.Time) error {
	q.Width = wl.width
	s, err := single(v, "starting_at", "")
	if err != nil {
		return err
	}
	if s == "" {
		return paramErr("starting_at", "required (RFC 3339, e.g. 2025-01-08T00:00:00Z)")
	}
	start, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return paramErr("starting_at", "not an RFC 3339 time: %q", s)
	}
	// Buckets are snapped to the UTC minute, hour or day holding starting_at.
	q.Start = start.UTC().Truncate(wl.width)
	if s, err = single(v, "ending_at", ""); err != nil {
		return err
	}
	if s != "" {
		end, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return paramErr("ending_at", "not an RFC 3339 time: %q", s)
		}
		if !end.After(start) {
			return paramErr("ending_at", "must be after starting_at")
		}
		// Only whole buckets that end at or before ending_at.
		q.End = end.UTC().Truncate(wl.width)
	} else {
		// Up to and including the bucket in progress.
		q.End = now.UTC().Truncate(wl.width).Add(wl.width)
	}
	if q.End.Before(q.Start) {
		q.End = q.Start
	}
	q.Limit = wl.defLimit
	if s, err = single(v, "limit", ""); err != nil {
		return err
	}
	if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > wl.max {
			return paramErr("limit", "must be an integer from 1 to %d for bucket_width %s, got %q", wl.max, width, s)
		}
		q.Limit = n
	}
	if s, err = single(v, "page", ""); err != nil {
		return err
	}
	if s != "" {
		p, ok := decodePage(s)
		if !ok || !p.Equal(p.Truncate(wl.width)) || p.Before(q.Start) || !p.Before(q.End) {
			return paramErr("page", "not a next_page value of this query")
		}
		q.Page = p
	}
	return nil
}

// single returns the one value of a scalar parameter, or def when absent.
func single(v url.Values, name, def string) (string, error) {
	vals := v[name]
	switch len(vals) {
	case 0:
		return def, nil
	case 1:
		return vals[0], nil
	}
	return "", paramErr(name, "given more than once")
}

// list merges the name[] and name forms, dropping empty values.
func list(v url.Values, name string) []string {
	var out []string
	for _, k := range [2]string{name + "[]", name} {
		for _, s := range v[k] {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func enumList(v url.Values, name string, allowed []string) ([]string, error) {
	vals := list(v, name)
	for _, s := range vals {
		if !slices.Contains(allowed, s) {
			return nil, paramErr(name+"[]", "%q is not one of %s", s, strings.Join(allowed, ", "))
		}
	}
	return vals, nil
}

const pagePrefix = "page_"

// encodePage makes a next_page token: "page_" + base64 of the next
// bucket's start, the scheme of the provider's documented example.
func encodePage(t time.Time) string {
	return pagePrefix + base64.StdEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339)))
}

func decodePage(s string) (time.Time, bool) {
	raw, ok := strings.CutPrefix(s, pagePrefix)
	if !ok {
		return time.Time{}, false
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, string(b))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}
