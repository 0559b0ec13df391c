package admin

import (
	"net/http"
	"slices"
	"time"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// BreakerReportPath lists the loop breaker's trips per person and week.
const BreakerReportPath = "/v1/organizations/breaker_report"

// resumeSession answers POST /v1/organizations/sessions/{id}/resume
// [?api_key_id=…]: a paused session goes on. The key's own caller (or the
// person it was minted for) may resume its pause; only an admin may clear
// a stop, or act on another key's session.
func (a *Handler) resumeSession(w http.ResponseWriter, r *http.Request) {
	id := policy.IdentityFrom(r.Context())
	session, key := r.PathValue("id"), r.URL.Query().Get("api_key_id")
	if key == "" {
		key = id.KeyID
	}
	admin := id.Role == policy.RoleAdmin
	if !admin && key != id.KeyID && !slices.Contains(id.OwnKeys, key) {
		fail(w, http.StatusForbidden, "resuming another key's session needs the gateway's admin key")
		return
	}
	if a.Breaker == nil {
		fail(w, http.StatusNotFound, "this gateway has no loop breaker")
		return
	}
	st, found, err := a.Breaker.Status(r.Context(), key, session)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "the loop breaker's state could not be read; retry")
		return
	}
	if !found || st.State == "watching" {
		fail(w, http.StatusNotFound, "session "+session+" of key "+key+" is not paused or stopped")
		return
	}
	if st.State == "stopped" && !admin {
		fail(w, http.StatusForbidden, "session "+session+" was stopped by the loop breaker: only an admin can clear it")
		return
	}
	actor := id.KeyID
	if id.Person != "" {
		actor = id.Person
	}
	was, ok, err := a.Breaker.Resume(r.Context(), key, session, "", actor)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "the loop breaker's state could not be changed; retry")
		return
	}
	if !ok {
		fail(w, http.StatusNotFound, "session "+session+" of key "+key+" is not paused or stopped")
		return
	}
	writeJSON(w, map[string]string{"type": "breaker_resume", "session_id": session, "api_key_id": key, "was": was, "state": "watching"})
}

// breakerState is the loop breaker's state of a listed session, nil when
// it does not watch it.
func (a *Handler) breakerState(r *http.Request, key, session string) *breaker.Status {
	st, ok, err := a.Breaker.Status(r.Context(), key, session)
	if err != nil || !ok {
		return nil
	}
	return &st
}

type tripWeek struct {
	WeekStart   string         `json:"week_start"`
	Person      string         `json:"person"`
	APIKeyID    string         `json:"api_key_id"`
	Trips       int            `json:"trips"`
	Patterns    map[string]int `json:"patterns"`
	SpentBefore sessionCost    `json:"spent_before"`
	SpentAfter  sessionCost    `json:"spent_after"`
	// LoopEstimate is what the tripped sessions would have spent in the
	// hour after each trip at the rate they were spending.
	LoopEstimate sessionCost `json:"loop_estimate"`
}

type tripObject struct {
	Time         string      `json:"time"`
	SessionID    string      `json:"session_id"`
	APIKeyID     string      `json:"api_key_id"`
	Person       string      `json:"person"`
	Agent        string      `json:"agent"`
	Pattern      string      `json:"pattern"`
	Action       string      `json:"action"`
	Turns        int64       `json:"turns"`
	SpentBefore  sessionCost `json:"spent_before"`
	SpentAfter   sessionCost `json:"spent_after"`
	LoopEstimate sessionCost `json:"loop_estimate"`
}

// breakerReport answers GET /v1/organizations/breaker_report
// [?starting_at&ending_at] (RFC 3339; default the last 8 weeks): the
// trips per person (the key's, when no person is known) and week
// (from Monday, UTC), with what the sessions spent before and after each
// trip and what the loop would have spent; and every trip. A regular
// key sees its own.
func (a *Handler) breakerReport(w http.ResponseWriter, r *http.Request) {
	trips, ok := a.Store.(ledger.BreakerStore)
	if a.Store == nil || !ok {
		fail(w, http.StatusNotFound, "trips are kept in the gateway's own ledger, which this llm_admin does not read")
		return
	}
	end := a.now().UTC()
	start := end.Add(-8 * 7 * 24 * time.Hour)
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"starting_at", &start}, {"ending_at", &end}} {
		if s := r.URL.Query().Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				fail(w, http.StatusBadRequest, p.name+": must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
				return
			}
			*p.dst = t.UTC()
		}
	}
	if !end.After(start) {
		fail(w, http.StatusBadRequest, "ending_at: must be after starting_at")
		return
	}
	rows, err := trips.BreakerTrips(r.Context(), start, end)
	if err != nil {
		if r.Context().Err() == nil {
			fail(w, http.StatusInternalServerError, "reading the loop breaker's trips failed")
		}
		return
	}
	own := ownRows(r, nil)
	cost := func(pico int64) sessionCost { return sessionCost{Amount: ledger.ShortCents(pico), Currency: "USD"} }
	out := struct {
		Data  []*tripWeek  `json:"data"`
		Trips []tripObject `json:"trips"`
	}{Data: []*tripWeek{}, Trips: []tripObject{}}
	weeks := map[[3]string]*tripWeek{}
	sums := map[*tripWeek][3]int64{}
	for _, t := range rows {
		if own != nil && !slices.Contains(own, t.KeyID) {
			continue
		}
		out.Trips = append(out.Trips, tripObject{Time: t.Time.Format(time.RFC3339), SessionID: t.SessionID, APIKeyID: t.KeyID, Person: t.Person,
			Agent: t.Agent, Pattern: t.Pattern, Action: t.Action, Turns: t.Turns, SpentBefore: cost(t.SpentPico), SpentAfter: cost(t.AfterPico),
			LoopEstimate: cost(t.EstimatePico)})
		day := t.Time.Truncate(24 * time.Hour)
		week := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)).Format(time.DateOnly)
		k := [3]string{week, t.Person, t.KeyID}
		wk := weeks[k]
		if wk == nil {
			wk = &tripWeek{WeekStart: week, Person: t.Person, APIKeyID: t.KeyID, Patterns: map[string]int{}}
			weeks[k] = wk
			out.Data = append(out.Data, wk)
		}
		wk.Trips++
		wk.Patterns[t.Pattern]++
		s := sums[wk]
		sums[wk] = [3]int64{min(ledger.MaxCost, s[0]+t.SpentPico), min(ledger.MaxCost, s[1]+t.AfterPico), min(ledger.MaxCost, s[2]+t.EstimatePico)}
	}
	for _, wk := range out.Data {
		s := sums[wk]
		wk.SpentBefore, wk.SpentAfter, wk.LoopEstimate = cost(s[0]), cost(s[1]), cost(s[2])
	}
	writeJSON(w, out)
}
