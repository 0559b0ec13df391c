// Package webhook posts one-line messages ({"text": ...}) to a team chat's
// incoming webhook (Slack's, or any that takes the same body) and cleans
// the values put into them. The agent hook and
// the gateway's budget alerts both post through it.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// defaultRetryAfter is the wait after a 429 that carries no usable
// Retry-After; Slack's documented rate is about one message per second.
const defaultRetryAfter = time.Second

// maxErrorBody bounds how much of an error response is read for its code.
const maxErrorBody = 4 << 10

// StatusError is a webhook answer other than 2xx. Code is the webhook's own
// error code (Slack answers with a plain-text code such as no_service), or
// empty when the body had none worth showing.
type StatusError struct {
	Status int
	Code   string
	// RetryAfter is set on a 429 that was not retried because waiting would
	// have overrun the time budget.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	s := "webhook answered " + strconv.Itoa(e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s exceeds the time budget)", e.RetryAfter)
	}
	return s
}

// Post sends {"text": text} to webhookURL as JSON. The whole exchange,
// including at most one retry after a 429, stays within ctx's deadline: the
// retry is skipped when the server asks for a wait that would overrun it.
// Errors never contain the URL, which is the webhook's credential.
func Post(ctx context.Context, client *http.Client, webhookURL, text string) error {
	if client == nil {
		client = http.DefaultClient
	}
	// A redirect is never followed: a 307 would re-post the message to
	// another host, and a 302 would turn it into a GET that posts nothing
	// while looking delivered. The redirect is reported instead.
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &c
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		wait, err := postOnce(ctx, client, webhookURL, body)
		if err == nil {
			return nil
		}
		var se *StatusError
		if attempt > 0 || !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
			return err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(deadline) {
			se.RetryAfter = wait
			return se
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return se
		case <-t.C:
		}
	}
}

// postOnce makes one request. On a 429 it also returns how long the server
// asked to wait.
func postOnce(ctx context.Context, client *http.Client, webhookURL string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhookURL, bytes.NewReader(body))
	if err != nil {
		// url.Parse errors quote the input; say only that it is malformed.
		return 0, errors.New("webhook url is not a valid http(s) url")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return 0, errors.New("webhook url is not a valid http(s) url")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Draining lets the connection be reused by a retry; there is none
		// after success, but it costs nothing for a two-byte "ok".
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return 0, nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	se := &StatusError{Status: resp.StatusCode, Code: errorCode(raw)}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		se.Code = "redirect not followed; set the webhook's final URL"
	}
	var wait time.Duration
	if resp.StatusCode == http.StatusTooManyRequests {
		wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return wait, se
}

// transportError describes a failed request without the URL: *url.Error
// embeds it, and the webhook path is the secret.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return errors.New("webhook did not answer within the time budget")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("webhook did not answer within the time budget")
		}
		err = ue.Err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return errors.New("webhook host lookup failed: " + dnsErr.Err)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return errors.New("webhook " + opErr.Op + " failed: " + opErr.Err.Error())
	}
	return errors.New("webhook request failed: " + err.Error())
}

// errorCode extracts a short error code from an error response: Slack's
// plain-text code, or the message of a JSON error (Discord's shape). It keeps
// only printable characters so a hostile body cannot inject terminal escapes.
func errorCode(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '{' {
		var j struct {
			Error   any    `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &j) != nil {
			return ""
		}
		if s, ok := j.Error.(string); ok && s != "" {
			return Clip(s)
		}
		return Clip(j.Message)
	}
	if raw[0] == '<' { // an HTML error page says nothing useful in one line
		return ""
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return Clip(line)
}

// Clip keeps s printable and short for one line of a message or a log: no
// control characters, at most 100 runes.
func Clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultRetryAfter
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > 24*3600 {
			return 24 * time.Hour
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	return defaultRetryAfter
}

// Redact removes the webhook URL, and its path on its own, from s. Errors are
// built without the URL already; this guards against a library message that
// quotes it anyway.
func Redact(s, webhookURL string) string {
	if webhookURL == "" {
		return s
	}
	s = strings.ReplaceAll(s, webhookURL, "[webhook url]")
	if u, err := url.Parse(webhookURL); err == nil {
		if len(u.EscapedPath()) > 1 {
			s = strings.ReplaceAll(s, u.EscapedPath(), "[webhook path]")
		}
		if u.RawQuery != "" {
			s = strings.ReplaceAll(s, u.RawQuery, "[webhook query]")
		}
	}
	return s
}
