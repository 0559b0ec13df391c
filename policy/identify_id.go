package policy

import (
	"net/http"
	"time"

	"github.com/modelgate/modelgate/apierror"
)

// IdentifyID is the key keyID as a request presenting its secret to site
// would be admitted now: a Caddyfile key of site, else a runtime key of the snapshot this
// instance serves on, refused when archived, inactive, expired, in an
// archived workspace or unknown. It serves work a key left to run later,
// whose secret the gateway never keeps (a batch's items).
func (c *Controls) IdentifyID(site, keyID string) (*Identity, *apierror.Error) {
	static, _, _ := c.Static(site)
	for _, id := range static {
		if id.KeyID == keyID {
			return c.workspaceOpen(id)
		}
	}
	keys, _ := c.Runtime()
	for _, k := range keys {
		if k.ID != keyID {
			continue
		}
		rk := newRuntimeKey(k)
		switch {
		case rk.status != "active":
			return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "API key " + keyID + " is " + rk.status + "; its batch items are not run"}
		case !rk.expires.IsZero() && !c.now().Before(rk.expires):
			return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "API key " + keyID + " expired at " + rk.expires.Format(time.RFC3339)}
		}
		return c.workspaceOpen(rk.id)
	}
	return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
		Message: "API key " + keyID + " is no longer configured; its batch items are not run"}
}

func (c *Controls) workspaceOpen(id *Identity) (*Identity, *apierror.Error) {
	if c.archivedWorkspace(id.Workspace) {
		return nil, &apierror.Error{Status: http.StatusForbidden, Code: "workspace_archived", NoRetry: true,
			Message: "API key " + id.KeyID + " belongs to workspace " + id.Workspace + ", which is archived"}
	}
	return id, nil
}
