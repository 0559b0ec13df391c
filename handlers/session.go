package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/workctx"
)

// resolveSession finds the coding-agent session a request belongs to and
// the agent that sent it, first match wins: Claude Code's header, its
// metadata.user_id, Codex's session headers, the generic session headers
// (opencode and others), then a Responses request's prompt_cache_key. The
// id is kept as the client sent it. The headers' part was read by the
// door (sessionHints).
func resolveSession(h SessionHints, body []byte, cf providers.Format, info providers.RequestInfo) (id, agent string) {
	if h.ClaudeCode != "" {
		return h.ClaudeCode, "claude-code"
	}
	if cf.SessionInMetadata() && bytes.Contains(body, []byte(`"user_id"`)) {
		if v := claudeMetadataSession(body); validSessionID(v) {
			return v, "claude-code"
		}
	}
	ua := h.Agent
	if h.Header != "" {
		return h.Header, or(ua, "header")
	}
	if k := info.SessionKey(); validSessionID(k) {
		return k, or(ua, "conversation")
	}
	return "", ua
}

// sessionHints reads what a request's headers say of its session: Claude
// Code's header, Codex's session headers, then the generic ones, and the
// agent.
func sessionHints(h http.Header) SessionHints {
	var s SessionHints
	if v := h.Get("X-Claude-Code-Session-Id"); validSessionID(v) {
		s.ClaudeCode = v
	}
	s.Agent = agentOf(h)
	s.Repo, s.Branch = h.Get(workctx.RepoHeader), h.Get(workctx.BranchHeader)
	for _, k := range [...]string{"Session-Id", "Session_id", "Thread-Id", "Conversation_id", "X-Session-Id", "X-Session-Affinity"} {
		if v := h.Get(k); validSessionID(v) {
			s.Header = v
			break
		}
	}
	return s
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// agentOf names the client from its originator or User-Agent.
func agentOf(h http.Header) string {
	o, ua := h.Get("Originator"), h.Get("User-Agent")
	switch {
	case strings.HasPrefix(o, "codex"), strings.HasPrefix(ua, "codex"):
		return "codex"
	case strings.HasPrefix(ua, "claude-cli/"):
		return "claude-code"
	case strings.Contains(ua, "opencode"):
		return "opencode"
	case strings.HasPrefix(ua, "GeminiCLI"), strings.Contains(ua, "gemini-cli"):
		return "gemini-cli"
	case strings.HasPrefix(ua, "ai-sdk"), strings.Contains(ua, " ai-sdk/"):
		return "ai-sdk"
	case strings.HasPrefix(ua, "Agents/"):
		return "agents-sdk"
	}
	return ""
}

// validSessionID keeps ids that can be stored and shown: at most 128
// printable ASCII characters.
func validSessionID(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// claudeMetadataSession reads the session out of Claude Code's
// metadata.user_id: a JSON object in a string (newer builds) or
// user_<hex>_account_<uuid>_session_<uuid> (older ones).
func claudeMetadataSession(body []byte) string {
	var req struct {
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	uid := req.Metadata.UserID
	if strings.HasPrefix(uid, "{") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(uid), &v) == nil {
			return v.SessionID
		}
		return ""
	}
	if i := strings.LastIndex(uid, "_session_"); i >= 0 {
		return uid[i+len("_session_"):]
	}
	return ""
}
