package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
)

// A Responses loop chained by previous_response_id (each turn's body only
// the failing call's output) is refused at the rule's count, as the same
// loop sent with its history inline is, whether the Session-Id rotates or
// stays (a hostile review saw such loops run on unseen).
func TestBreakerCatchesLoopChainedByPreviousResponse(t *testing.T) {
	for _, rotate := range []bool{true, false} {
		t.Run(fmt.Sprint("rotate=", rotate), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
					`"tool_calls":[{"id":"call_make","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"make\"}"}}]},"finish_reason":"tool_calls"}],`+
					`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			}))
			t.Cleanup(up.Close)
			store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			rs := store.(ledger.ResponseStore)
			g, _ := testGateway(t, "model_list:\n"+entry("m", up.URL), func(o *GatewayOptions) {
				o.Responses = func() ledger.ResponseStore { return rs }
				o.Breaker = breaker.New(breaker.Options{})
			})

			tools := `"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]`
			body := `{"model":"m","store":true,` + tools + `,"input":"build it"}`
			codes, lastBody := []int{}, ""
			for n := 1; n <= 6; n++ {
				session := "s1"
				if rotate {
					session = fmt.Sprint("rot-", n)
				}
				rec := post(g, breakerAlice, "/v1/responses", body, "Session-Id", session)
				codes, lastBody = append(codes, rec.Code), rec.Body.String()
				if rec.Code != http.StatusOK {
					break
				}
				var resp struct {
					ID     string
					Output []struct {
						CallID string `json:"call_id"`
					}
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Output) == 0 || resp.Output[0].CallID == "" {
					t.Fatalf("turn %d: %s", n, rec.Body)
				}
				body = fmt.Sprintf(`{"model":"m","store":true,%s,"previous_response_id":%q,"input":[{"type":"function_call_output","call_id":%q,"output":"Exit code: 2\nmake: *** No rule to make target"}]}`,
					tools, resp.ID, resp.Output[0].CallID)
			}
			if last := codes[len(codes)-1]; last != http.StatusTooManyRequests || len(codes) > 4 {
				t.Fatalf("statuses %v (%s): want the loop refused with 429 by the fourth turn (the third failing call)", codes, lastBody)
			}
		})
	}
}
