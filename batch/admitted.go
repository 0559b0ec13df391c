package batch

import (
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// admittedAs is whom a passed-through batch was admitted as, kept with
// it: the scopes its hold was taken against and its records carry. A
// provider's batch may run 24 hours and a sign-in key lives 12, so the
// key may be inactive, expired or gone at settlement; the batch still
// spends as its caller at create, never as no one.
type admittedAs struct {
	Workspace    string               `json:"workspace,omitempty"`
	Person       string               `json:"person,omitempty"`
	Groups       string               `json:"groups,omitempty"`
	Limits       ledger.Limits        `json:"limits"`
	PersonBudget *ledger.PersonBudget `json:"person_budget,omitempty"`
	Runtime      bool                 `json:"runtime,omitempty"`
}

func admittedOf(id *policy.Identity) *admittedAs {
	if id == nil {
		return nil
	}
	return &admittedAs{Workspace: id.Workspace, Person: id.PersonID(), Groups: id.Groups, Limits: id.Limits, PersonBudget: id.PersonBudget, Runtime: id.Runtime}
}

// identity is the caller a batch of keyID was admitted as.
func (a *admittedAs) identity(keyID string) *policy.Identity {
	return &policy.Identity{KeyID: keyID, Role: policy.RoleUser, Workspace: a.Workspace, Owner: a.Person, Groups: a.Groups,
		Limits: a.Limits, PersonBudget: a.PersonBudget, Runtime: a.Runtime}
}

// spender is whom a batch of keyID admitted as a spends as: a, else (a
// batch stored before the gateway kept it) the key as it stands now,
// nil when the key is no longer known.
func (s *Service) spender(keyID string, a *admittedAs) *policy.Identity {
	if a != nil {
		return a.identity(keyID)
	}
	id, _ := s.identify(keyID)
	return id
}
