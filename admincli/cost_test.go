package admincli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// WorkCost asks the work report for the pull request and sums it over
// every page and day, leaving out the unattributed rows.
func TestWorkCost(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		pr := `{"number":41,"title":"Fix","state":"merged"}`
		if r.URL.Query().Get("page") == "" {
			_, _ = w.Write([]byte(`{"data":[{"results":[{"unattributed":false,"repository":"github.com/acme/shop","branch":"fix","pull_request":` + pr +
				`,"ticket":null,"amount":"100.5","sessions":1,"requests":3},{"unattributed":true,"amount":"7.0","sessions":0,"requests":1}]}],"has_more":true,"next_page":"page_2"}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":[{"results":[{"unattributed":false,"repository":"github.com/acme/shop","branch":"fix","pull_request":` + pr +
			`,"ticket":null,"amount":"20.0","sessions":1,"requests":2}]}],"has_more":false,"next_page":null}`))
	}))
	defer srv.Close()
	c := &Client{Gateway: srv.URL, AdminKey: "k", HTTP: srv.Client()}
	rows, err := c.WorkCost(context.Background(), 30, time.Date(2025, 9, 30, 12, 0, 0, 0, time.UTC), WorkFilter{PR: 41, Repo: "github.com/acme/shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Cents != 120.5 || rows[0].Sessions != 2 || rows[0].Requests != 5 || rows[0].State != "merged" {
		t.Fatalf("rows %+v", rows)
	}
	if !strings.Contains(queries[0], "pull_requests%5B%5D=41") || !strings.Contains(queries[0], "repositories%5B%5D=github.com%2Facme%2Fshop") ||
		!strings.Contains(queries[0], "starting_at=2025-09-01T00%3A00%3A00Z") {
		t.Errorf("query %s", queries[0])
	}
	var out bytes.Buffer
	if err := WriteCost(&out, rows); err != nil || !strings.Contains(out.String(), "#41 Fix") || !strings.Contains(out.String(), "$1.2050") {
		t.Errorf("table:\n%s", out.String())
	}
}
