package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// TestMCPApprovalsOption: the modelgate app's mcp_approvals block, and
// the errors that name its option and the fix without echoing the
// webhook URL, which is a credential.
func TestMCPApprovalsOption(t *testing.T) {
	v, err := parseAppOption(caddyfile.NewTestDispenser("modelgate {\nmcp_approvals {\nwebhook {env.HOOK}\npublic_url https://gw.example\ntimeout 5m\n}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(v.(httpcaddyfile.App).Value), `{"mcp_approvals":{"webhook":"{env.HOOK}","public_url":"https://gw.example","timeout":300000000000}}`; got != want {
		t.Errorf("parsed %s, want %s", got, want)
	}
	for input, want := range map[string]string{
		"modelgate {\nmcp_approvals {\ntimeout soon\n}\n}": "mcp_approvals timeout",
		"modelgate {\nmcp_approvals {\nchannel x\n}\n}":    `unknown option "channel"`,
		"modelgate {\nmcp_approvals {\nwebhook\n}\n}":      "mcp_approvals webhook: give one value",
		"modelgate {\nmcp_approvals on {\nwebhook x\n}\n}": "wrong argument count",
	} {
		if _, err := parseAppOption(caddyfile.NewTestDispenser(input), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", input, err, want)
		}
	}
	for c, want := range map[*MCPApprovalsConfig]string{
		{Webhook: "hooks.slack.com/services/SECRET"}:                       "mcp_approvals webhook: want the chat's incoming webhook URL",
		{PublicURL: "https://gw.example/some/path"}:                        "must be the gateway's base URL",
		{PublicURL: "gw.example"}:                                          "must be the gateway's base URL",
		{Webhook: "https://hooks.example/x", PublicURL: "http://gw:8080/"}: "",
	} {
		err := c.provision()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SECRET")) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
}

// TestMintedAuditorKeyDoesNotApprove (H12-5): a key minted for a person
// whose group makes them an auditor keeps that role for the approval
// links, which refuse an auditor; a member's minted key is a person who
// may decide.
func TestMintedAuditorKeyDoesNotApprove(t *testing.T) {
	ctx := context.Background()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	c := policy.NewControls(time.Now)
	c.SetStore(store.(ledger.ControlStore))
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	auth, err := policy.NewAuth([]policy.Key{{Secret: "static-secret", ID: "static"}})
	if err != nil {
		t.Fatal(err)
	}
	auth.WithRuntime(c)
	for person, want := range map[string]bool{"carol@example.com": true, "bob@example.com": false} {
		role := "member"
		if want {
			role = "auditor"
		}
		_, secret, err := c.MintKey(ctx, policy.NewKey{Name: "oidc: " + person, ExpiresAt: time.Now().Add(time.Hour),
			CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: person, Role: role}})
		if err != nil {
			t.Fatal(err)
		}
		id, refusal := auth.Identify(secret)
		if refusal != nil {
			t.Fatal(refusal)
		}
		if id.Role != policy.RoleUser {
			t.Errorf("%s's minted key has role %q: a key acts as a user", person, id.Role)
		}
		r := httptest.NewRequest(http.MethodPost, approval.Path+"x", nil)
		ap := linkApprover(r.WithContext(policy.WithIdentity(ctx, id)))
		if ap.Auditor != want || ap.Person != person {
			t.Errorf("%s's minted key approves as %+v, want auditor %v", person, ap, want)
		}
	}
}
