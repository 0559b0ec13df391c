package apierror

import "testing"

// TestGeminiErrorShape: Google's error body, with RetryInfo for a rate
// refusal and a per-day QuotaFailure for one only time cures.
func TestGeminiErrorShape(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Status: 400, Message: "bad"}, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`},
		{Error{Status: 429, Message: "slow down", RetryAfter: "21"},
			`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"21s"}]}}`},
		{Error{Status: 429, Message: "budget spent", NoRetry: true, RetryAfter: "3600"},
			`{"error":{"code":429,"message":"budget spent","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"description":"budget spent","quotaId":"GatewayBudgetPerDay"}]}]}}`},
		{Error{Status: 502, Message: "down"}, `{"error":{"code":502,"message":"down","status":"UNAVAILABLE"}}`},
	} {
		if got := string(tc.e.Body(Gemini)); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
