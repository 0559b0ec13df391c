package admincli

import (
	"context"
	"encoding/json"
	"net/url"
)

// Resumed is the admin API's answer to a resume.
type Resumed struct {
	SessionID string `json:"session_id"`
	APIKeyID  string `json:"api_key_id"`
	Was       string `json:"was"`
	State     string `json:"state"`
}

// Resume lets a session the loop breaker paused (or, with the admin key,
// stopped) go on. keyID may be "" for the calling key's own session.
func (c *Client) Resume(ctx context.Context, session, keyID string) (Resumed, error) {
	path := "/v1/organizations/sessions/" + url.PathEscape(session) + "/resume"
	if keyID != "" {
		path += "?" + url.Values{"api_key_id": {keyID}}.Encode()
	}
	out, err := c.do(ctx, "POST", path, nil)
	if err != nil {
		return Resumed{}, err
	}
	var r Resumed
	return r, json.Unmarshal(out, &r)
}
