package ledger

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"time"
)

// SecretsReport is the JSON body of GET /v1/organizations/secrets_report:
// the secret firewall's detections over the range of the query's page
// (starting_at, bucket_width × limit), one row per rule, person, key,
// workspace and alias, most detections first. It never holds a value.
type SecretsReport struct {
	StartingAt string         `json:"starting_at"`
	EndingAt   string         `json:"ending_at"`
	Data       []SecretsGroup `json:"data"`
}

// SecretsGroup counts one group's detections by what the firewall did.
type SecretsGroup struct {
	Rule        string `json:"rule"`
	Person      string `json:"person"`
	APIKeyID    string `json:"api_key_id"`
	WorkspaceID string `json:"workspace_id"`
	Model       string `json:"model"`
	Detections  int64  `json:"detections"`
	Redacted    int64  `json:"redacted"`
	Blocked     int64  `json:"blocked"`
	Logged      int64  `json:"logged"`
	InAnswers   int64  `json:"in_answers"`
	LastSeen    string `json:"last_seen"`
}

// ParseSecretsQuery validates the report's query: the usage report's
// time, paging and key and workspace filters, no grouping.
func ParseSecretsQuery(v url.Values, now time.Time) (ReportQuery, error) {
	return parseBucketed(v, now, nil)
}

// SecretsReportFrom reads the endpoint secret_detection records in the
// page's range (see EndpointSecret for what each field holds).
func SecretsReportFrom(ctx context.Context, s Store, q ReportQuery) (*SecretsReport, error) {
	p := q.page()
	out := &SecretsReport{StartingAt: formatTime(p.start), EndingAt: formatTime(p.end), Data: []SecretsGroup{}}
	if p.n == 0 {
		return out, nil
	}
	recs, err := s.Query(ctx, Filter{From: p.start, To: p.end, APIKeyIDs: q.APIKeyIDs, WorkspaceIDs: q.WorkspaceIDs})
	if err != nil {
		return nil, err
	}
	type key struct{ rule, person, apiKey, workspace, model string }
	groups := map[key]*SecretsGroup{}
	last := map[key]time.Time{}
	for i := range recs {
		r := &recs[i]
		if r.Endpoint != EndpointSecret {
			continue
		}
		k := key{r.Provider, r.UpstreamModel, r.KeyID, r.Workspace, r.Alias}
		g := groups[k]
		if g == nil {
			g = &SecretsGroup{Rule: k.rule, Person: k.person, APIKeyID: k.apiKey, WorkspaceID: k.workspace, Model: k.model}
			groups[k] = g
		}
		g.Detections++
		switch r.ServiceTier {
		case "redact":
			g.Redacted++
		case "block":
			g.Blocked++
		case "log":
			g.Logged++
		}
		if r.Agent == "answer" {
			g.InAnswers++
		}
		if r.Time.After(last[k]) {
			last[k] = r.Time
		}
	}
	for k, g := range groups {
		g.LastSeen = formatTime(last[k])
		out.Data = append(out.Data, *g)
	}
	slices.SortFunc(out.Data, func(a, b SecretsGroup) int {
		return cmp.Or(cmp.Compare(b.Detections, a.Detections), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Person, b.Person),
			cmp.Compare(a.APIKeyID, b.APIKeyID), cmp.Compare(a.Model, b.Model), cmp.Compare(a.WorkspaceID, b.WorkspaceID))
	})
	return out, nil
}
