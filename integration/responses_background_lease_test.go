package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesBackgroundDeadInstance: a background response whose
// instance dies ends as failed with a clear error within the lease
// (15 s), read from another instance on the same PostgreSQL (hostile
// review N9: it stayed queued for ever); and while it runs on A, B
// answers in_progress, not queued, even before the upstream sent a byte.
func TestResponsesBackgroundDeadInstance(t *testing.T) {
	u, _, _ := freshSchema(t)
	// An upstream that answers nothing for a minute.
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so net/http notices the caller hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(hold.Close)
	models := "model_list:\n  - model_name: slow\n    proxy_params:\n      model: openai/slow-gpt\n      api_base: " + hold.URL + "/v1\n      api_key: upstream-secret\n"
	cfg := gatewayConfig{models: models, ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	ca, cb := openaiClient(a, aliceKey), openaiClient(b, aliceKey)
	ctx := context.Background()
	r, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	// It runs on A from its start: B says so within a poll or two.
	start := time.Now()
	for {
		got, err := cb.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "in_progress" {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("while it runs on A, B reads %s", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	for {
		got, err := cb.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "failed" {
			if got.Error.Code != "server_error" || !strings.Contains(got.Error.Message, "instance running this background response stopped") {
				t.Errorf("failed with %q %q", got.Error.Code, got.Error.Message)
			}
			t.Logf("failed %v after its instance was killed", time.Since(killed))
			break
		}
		if got.Status != "in_progress" {
			t.Fatalf("after its instance died the response reads %s", got.Status)
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("%v after its instance died the response still reads %s", time.Since(killed), got.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Every later read, on any instance, says failed.
	if got, err := cb.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil || got.Status != "failed" {
		t.Errorf("read again: %v %v", got.Status, err)
	}
}
