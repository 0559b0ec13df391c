package admincli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/adminapi"
)

// HTTPClient is the client the CLI reaches a gateway with. caFile, when
// set, is a PEM file of CA certificates trusted besides the system's: the
// root of a private CA, or of Caddy's `tls internal` (root.crt under its
// data directory's pki/authorities/local). Without it the system's roots
// apply, which Go on Linux also reads from $SSL_CERT_FILE and $SSL_CERT_DIR.
func HTTPClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert: %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}, nil
}

// reachError explains a failed connection; a certificate from a CA the
// client does not know gets the two ways to trust it.
func reachError(err error) error {
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Errorf("reaching the gateway: %v; for a private CA or Caddy's `tls internal`, pass --ca-cert <root.crt> or set SSL_CERT_FILE", err)
	}
	return fmt.Errorf("reaching the gateway: %v", err)
}

// Workspace is a workspace as the admin API lists it.
type Workspace = adminapi.Workspace

// ListWorkspaces reads every active workspace, page by page.
func (c *Client) ListWorkspaces(ctx context.Context) ([]Workspace, error) {
	return listAll[Workspace](ctx, c, adminapi.WorkspacesPath, "workspace list")
}

// ResolveWorkspace turns what --workspace was given into a workspace id:
// an id is kept, a name is the id of the one workspace of that name.
// Caddyfile workspaces are listed with their name as id.
func ResolveWorkspace(list []Workspace, v string) (string, error) {
	var named []Workspace
	for _, ws := range list {
		if ws.ID == v {
			return v, nil
		}
		if ws.Name == v {
			named = append(named, ws)
		}
	}
	switch len(named) {
	case 1:
		return named[0].ID, nil
	case 0:
		var known []string
		for _, ws := range list {
			if ws.Name != ws.ID {
				known = append(known, ws.Name+" ("+ws.ID+")")
			} else {
				known = append(known, ws.ID)
			}
		}
		if len(known) == 0 {
			return "", fmt.Errorf("--workspace: no workspace %s: this gateway has none; create one with POST /v1/organizations/workspaces or in the Caddyfile", strconv.Quote(v))
		}
		return "", fmt.Errorf("--workspace: no workspace named or with id %s (known: %s)", strconv.Quote(v), clip(known))
	default:
		ids := make([]string, len(named))
		for i, ws := range named {
			ids[i] = ws.ID
		}
		return "", fmt.Errorf("--workspace: %d workspaces are named %s (%s); give the id", len(named), strconv.Quote(v), strings.Join(ids, ", "))
	}
}

// ListAliases reads the model aliases the gateway serves: GET /v1/models
// answered to the admin key, which may use every alias.
func (c *Client) ListAliases(ctx context.Context) ([]string, error) {
	b, err := c.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("the gateway's model list is unreadable: %v", err)
	}
	out := make([]string, len(list.Data))
	for i, m := range list.Data {
		out[i] = m.ID
	}
	return out, nil
}

// CheckModels refuses a --models list naming an alias the gateway does not
// serve: such a key could never use it, and a typo would go unnoticed.
func CheckModels(served, asked []string) error {
	var unknown []string
	for _, m := range asked {
		if !slices.Contains(served, m) {
			unknown = append(unknown, strconv.Quote(m))
		}
	}
	switch {
	case len(unknown) == 0:
		return nil
	case len(served) == 0:
		return fmt.Errorf("--models: %s: the gateway serves no model", strings.Join(unknown, ", "))
	case len(unknown) == 1:
		return fmt.Errorf("--models: %s is not a model of this gateway (it serves: %s)", unknown[0], clip(served))
	}
	return fmt.Errorf("--models: %s are not models of this gateway (it serves: %s)", strings.Join(unknown, ", "), clip(served))
}

// Check makes a create or update body from the flags good against the
// gateway: a workspace name becomes its id, and every alias in models must
// be one the gateway serves.
func (c *Client) Check(ctx context.Context, fields map[string]any) error {
	if v, ok := fields["workspace_id"].(string); ok && v != "" {
		list, err := c.ListWorkspaces(ctx)
		if err != nil {
			return fmt.Errorf("--workspace: reading the gateway's workspaces: %v", err)
		}
		id, err := ResolveWorkspace(list, v)
		if err != nil {
			return err
		}
		fields["workspace_id"] = id
	}
	if models, ok := fields["models"].([]string); ok && len(models) > 0 {
		served, err := c.ListAliases(ctx)
		if err != nil {
			return fmt.Errorf("--models: reading the gateway's models (GET /v1/models) to check them: %v", err)
		}
		if err := CheckModels(served, models); err != nil {
			return err
		}
	}
	return nil
}

// clip joins names for a message, at most 20 of them.
func clip(names []string) string {
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + ", … " + strconv.Itoa(len(names)-20) + " more"
	}
	return strings.Join(names, ", ")
}
