package ledger

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// TestSecretsReport: detections stored as secret_detection records come
// back counted per rule, person, key and model, by action and direction;
// ordinary requests are not counted.
func TestSecretsReport(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	det := func(h int, rule, person, key, action, dir string) Record {
		r := Record{Time: day.Add(time.Duration(h) * time.Hour), KeyID: key, Workspace: "ws", Alias: "coder",
			Provider: rule, UpstreamModel: person, ServiceTier: action, Agent: dir, Endpoint: EndpointSecret, Status: 200, Outcome: OutcomeOK}
		if action == "block" {
			r.Status, r.Outcome = 400, OutcomeRefused
		}
		return r
	}
	recs := []Record{
		det(1, "aws-access-token", "ann@example.com", "k1", "redact", "request"),
		det(2, "aws-access-token", "ann@example.com", "k1", "redact", "answer"),
		det(3, "aws-access-token", "ann@example.com", "k1", "block", "request"),
		det(4, "github-pat", "bob@example.com", "k2", "log", "request"),
		{Time: day.Add(time.Hour), KeyID: "k1", Alias: "coder", UpstreamModel: "m", Provider: "p", Endpoint: EndpointMessages,
			Status: 200, Outcome: OutcomeOK, InputTokens: 10},
	}
	if err := s.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	q, err := ParseSecretsQuery(url.Values{"starting_at": {"2026-03-02T00:00:00Z"}, "limit": {"2"}}, day.Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := SecretsReportFrom(context.Background(), s, q)
	if err != nil {
		t.Fatal(err)
	}
	want := []SecretsGroup{
		{Rule: "aws-access-token", Person: "ann@example.com", APIKeyID: "k1", WorkspaceID: "ws", Model: "coder", Detections: 3, Redacted: 2, Blocked: 1, InAnswers: 1, LastSeen: "2026-03-02T03:00:00Z"},
		{Rule: "github-pat", Person: "bob@example.com", APIKeyID: "k2", WorkspaceID: "ws", Model: "coder", Detections: 1, Logged: 1, LastSeen: "2026-03-02T04:00:00Z"},
	}
	if len(rep.Data) != len(want) {
		t.Fatalf("rows %+v", rep.Data)
	}
	for i := range want {
		if rep.Data[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rep.Data[i], want[i])
		}
	}
	if rep.StartingAt != "2026-03-02T00:00:00Z" || rep.EndingAt != "2026-03-04T00:00:00Z" {
		t.Fatalf("range %s – %s", rep.StartingAt, rep.EndingAt)
	}
}
