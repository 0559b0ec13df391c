package integration

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// chatSink is a team chat's incoming webhook on loopback: it keeps the
// text of every message posted to it.
type chatSink struct {
	URL   string
	mu    sync.Mutex
	posts []string
}

func startChatSink(t *testing.T) *chatSink {
	t.Helper()
	s := &chatSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Text string `json:"text"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		s.mu.Lock()
		s.posts = append(s.posts, m.Text)
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Posts is what was posted so far, in order.
func (s *chatSink) Posts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posts)
}
