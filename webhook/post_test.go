package webhook

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", defaultRetryAfter},
		{"2", 2 * time.Second},
		{"0", 0},
		{"1.5", 1500 * time.Millisecond},
		{"-3", 0},
		{"soon", defaultRetryAfter},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tc := range tests {
		if got := retryAfter(tc.in, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no_service", "no_service"},
		{"channel_is_archived\n", "channel_is_archived"},
		{"invalid_payload\nmore detail", "invalid_payload"},
		{`{"ok":false,"error":"rate_limited"}`, "rate_limited"},
		{`{"code":10015,"message":"Unknown Webhook"}`, "Unknown Webhook"},
		{`{"code":1}`, ""},
		{"<html><body>502</body></html>", ""},
		{"bad\x1b[31mred", "bad[31mred"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := errorCode([]byte(tc.in)); got != tc.want {
			t.Errorf("errorCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	u := "https://hooks.slack.com/services/T0/B0/secret"
	got := Redact(`Post "https://hooks.slack.com/services/T0/B0/secret": eof; path /services/T0/B0/secret`, u)
	want := `Post "[webhook url]": eof; path [webhook path]`
	if got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}
