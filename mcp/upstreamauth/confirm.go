package upstreamauth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// confirmation is what the confirmation page asks the person to agree
// to, and the sealed link its button posts back.
type confirmation struct {
	Server, URL, Issuer string
	// SharedKey is the key a shared grant is for, "" for the person's own.
	SharedKey string
	Link      string
	StartPath string
}

// confirm shows what connecting l would do, and a button that posts it
// with the session's CSRF token: a GET (a link followed, a cross-site
// page) never starts an authorization.
func (b *Broker) confirm(w http.ResponseWriter, id *policy.Identity, l link) {
	if status, title, text := b.refusal(id, l); status != 0 {
		b.page(w, status, title, text, nil)
		return
	}
	sealed, err := seal(b.seal.links, linkAD, l)
	if err != nil {
		b.page(w, http.StatusInternalServerError, "Could not start", "The authorization could not be started.", nil)
		return
	}
	s := b.servers[l.Server]
	c := &confirmation{Server: s.name, URL: s.url, Issuer: s.oauth.AuthorizationServer, Link: sealed, StartPath: Path + "start"}
	text := "Connect your own account at MCP server " + s.name + ": the gateway will call it as you, for your keys and sessions only."
	if !isPersonUnit(l.Unit) {
		c.SharedKey = strings.TrimPrefix(l.Unit, "k:")
		text = "Connect YOUR account at MCP server " + s.name + " to the shared key " + c.SharedKey + ": every holder of that key will act at " + s.name + " as your account, until an admin revokes the grant or the key. Continue only if that is what you mean to do."
	}
	b.page(w, http.StatusOK, "Connect "+s.name+"?", text, &pageMore{Confirm: c})
}

// begin is the confirmation's POST: it checks the link again and answers
// the authorization server's URL for the page to go to.
func (b *Broker) begin(w http.ResponseWriter, r *http.Request, id *policy.Identity) {
	var in struct {
		Link string `json:"link"`
	}
	var l link
	if json.NewDecoder(io.LimitReader(r.Body, 8<<10)).Decode(&in) != nil || open(b.seal.links, linkAD, in.Link, &l) != nil {
		writeJSON(w, http.StatusBadRequest, apiError("the body must be {\"link\": ...} with a link this gateway made; open the connect link again"))
		return
	}
	if status, _, text := b.refusal(id, l); status != 0 {
		writeJSON(w, status, apiError(text))
		return
	}
	to, err := b.start(r.Context(), l)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, apiError(discoveryText(err)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"redirect": to})
}

// KeyGrant is a shared key's grant as an admin's page lists it.
type KeyGrant struct {
	Server      string    `json:"server"`
	Key         string    `json:"key"`
	Unit        string    `json:"unit"`
	ConnectedAt time.Time `json:"connected_at"`
}

// keyGrants lists the grants of keys of no one, for an admin; nil for
// anyone else.
func (b *Broker) keyGrants(r *http.Request, id *policy.Identity, store ledger.MCPUpstreamTokenStore) ([]KeyGrant, error) {
	if id.Role != policy.RoleAdmin {
		return nil, nil
	}
	rows, err := store.MCPUpstreamKeyTokens(r.Context())
	if err != nil {
		return nil, err
	}
	out := []KeyGrant{}
	for _, row := range rows {
		out = append(out, KeyGrant{Server: row.Server, Key: strings.TrimPrefix(row.Unit, "k:"), Unit: row.Unit, ConnectedAt: row.CreatedAt})
	}
	return out, nil
}

// disconnectUnits is whose grants a disconnect forgets: the person's own
// (with the grant of the unit they had before people were named by
// subject), or, for an admin naming {"unit": "k:<key>"}, a shared key's.
func disconnectUnits(r *http.Request, id *policy.Identity) ([]string, error) {
	var in struct {
		Unit string `json:"unit"`
	}
	if r.ContentLength != 0 && r.Body != nil {
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<10)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
			return nil, errors.New("the body must be empty or {\"unit\": \"k:<key id>\"}")
		}
	}
	if in.Unit == "" {
		if old := legacyUnit(id); old != "" {
			return []string{Unit(id), old}, nil
		}
		return []string{Unit(id)}, nil
	}
	if !strings.HasPrefix(in.Unit, "k:") || !mayAct(id, in.Unit) {
		return nil, errors.New("unit: only an admin may disconnect a shared key's grant (\"k:<key id>\"); a person disconnects their own with no body")
	}
	return []string{in.Unit}, nil
}
