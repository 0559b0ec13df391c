package scim

import (
	"context"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

type memKeys struct{ keys map[string]ledger.ControlKey }

func (m *memKeys) Refresh(context.Context) error { return nil }
func (m *memKeys) Runtime() ([]ledger.ControlKey, []ledger.ControlWorkspace) {
	var out []ledger.ControlKey
	for _, k := range m.keys {
		out = append(out, k)
	}
	return out, nil
}
func (m *memKeys) UpdateKey(_ context.Context, id string, change func(*ledger.ControlKey) error) (ledger.ControlKey, error) {
	k, ok := m.keys[id]
	if !ok {
		return k, ledger.ErrControlNotFound
	}
	if err := change(&k); err != nil {
		return k, err
	}
	m.keys[id] = k
	return k, nil
}

func TestControlKeysRevokeAndRegrant(t *testing.T) {
	oidc := func(id, email, sub string) *ledger.KeyCreator {
		return &ledger.KeyCreator{Type: "oidc", ID: id, Email: email, Subject: sub}
	}
	m := &memKeys{keys: map[string]ledger.ControlKey{
		"k1": {ID: "k1", Status: "active", CreatedBy: oidc("Ada@Example.com", "Ada@Example.com", "sub-1")},
		"k2": {ID: "k2", Status: "active", CreatedBy: oidc("sub-1", "", "sub-1")},
		"k3": {ID: "k3", Status: "active", CreatedBy: oidc("bob@example.com", "bob@example.com", "sub-2")},
		"k4": {ID: "k4", Status: "active", Name: "ada@example.com"}, // an admin's key named after her is not hers
	}}
	var resolved []string
	ck := ControlKeys{Store: m, Resolve: func(groups []string) Grant {
		resolved = groups
		if len(groups) == 0 {
			return Grant{}
		}
		return Grant{OK: true, Workspace: "platform", Limits: ledger.Limits{RPM: 30}}
	}}
	ctx := context.Background()
	p := Person{UserName: "ada@example.com", ExternalID: "sub-1"}
	if n, err := ck.Regrant(ctx, p, []string{"eng-platform"}); err != nil || n != 2 {
		t.Fatalf("regrant: %d, %v", n, err)
	}
	if m.keys["k1"].WorkspaceID != "platform" || m.keys["k2"].Limits.RPM != 30 || m.keys["k3"].WorkspaceID != "" || m.keys["k4"].WorkspaceID != "" {
		t.Errorf("regrant moved the wrong keys: %+v", m.keys)
	}
	if resolved[0] != "eng-platform" {
		t.Errorf("resolved %v", resolved)
	}
	if n, err := ck.Revoke(ctx, p); err != nil || n != 2 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if m.keys["k1"].Status != "inactive" || m.keys["k2"].Status != "inactive" || m.keys["k3"].Status != "active" || m.keys["k4"].Status != "active" {
		t.Errorf("revoke touched the wrong keys: %+v", m.keys)
	}
	if n, _ := ck.Revoke(ctx, p); n != 0 {
		t.Errorf("a second revoke changed %d keys", n)
	}
	// A person in no configured group loses their keys.
	m.keys["k3"] = ledger.ControlKey{ID: "k3", Status: "active", CreatedBy: oidc("bob@example.com", "", "")}
	if n, _ := ck.Regrant(ctx, Person{UserName: "bob@example.com"}, nil); n != 1 || m.keys["k3"].Status != "inactive" {
		t.Errorf("regrant to no group: %d, %+v", n, m.keys["k3"])
	}
}
