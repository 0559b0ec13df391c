package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// connectAs runs the whole flow in id's session, whose account at the
// authorization server is user.
func connectAs(t *testing.T, b *Broker, id *policy.Identity, user string) {
	t.Helper()
	cb := authorize(t, startAs(t, b, Path+"server/gh", id), user)
	if w := serveAs(b, http.MethodGet, cb, "", id); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Connected") {
		t.Fatalf("callback: %d %s", w.Code, w.Body)
	}
}

// tokenOf is the upstream account id's grant acts as, or the error.
func tokenOf(t *testing.T, b *Broker, id *policy.Identity) (string, error) {
	t.Helper()
	return b.Token(context.Background(), "gh", Unit(id), "")
}

// TestGrantFollowsSubjectNotEmail: a grant belongs to the identity
// provider's (issuer, subject), not to the email. When the address
// pat@example.com passes from one person to another, the second person
// gets no upstream token of the first's — not by their session, not by
// their keys, not through an older grant keyed by the email — and each
// connects and keeps their own.
func TestGrantFollowsSubjectNotEmail(t *testing.T) {
	as, _, _, b := fixture(t)
	const email = "pat@example.com"
	first := &policy.Identity{KeyID: email, Person: email, Subject: "https://idp.example 00u-first"}
	firstKey := &policy.Identity{KeyID: "key-1", Owner: email, Subject: "https://idp.example 00u-first"}
	second := &policy.Identity{KeyID: email, Person: email, Subject: "https://idp.example 00u-second"}
	secondKey := &policy.Identity{KeyID: "key-2", Owner: email, Subject: "https://idp.example 00u-second"}
	otherIdP := &policy.Identity{KeyID: email, Person: email, Subject: "https://other-idp.example 00u-first"}
	if Unit(first) != "s:https://idp.example 00u-first" || Unit(firstKey) != Unit(first) {
		t.Fatalf("units: %q %q", Unit(first), Unit(firstKey))
	}

	connectAs(t, b, first, "first-at-gh")
	for _, id := range []*policy.Identity{first, firstKey} {
		tok, err := tokenOf(t, b, id)
		if who, ok := as.Who(tok); err != nil || !ok || who != "first-at-gh" {
			t.Fatalf("the first person (%s): %q %v", id.KeyID, who, err)
		}
	}
	var nc *NotConnectedError
	for _, id := range []*policy.Identity{second, secondKey, otherIdP} {
		if _, err := tokenOf(t, b, id); !errors.As(err, &nc) {
			t.Fatalf("%s (%s) got the first person's grant: %v", id.KeyID, id.Subject, err)
		}
	}
	// The second person's page lists the server as not connected, and the
	// first person's link is not theirs to complete.
	w := serveAs(b, http.MethodGet, Path+"?format=json", "", second)
	var page struct {
		Data []Connection `json:"data"`
	}
	if json.Unmarshal(w.Body.Bytes(), &page) != nil || len(page.Data) != 1 || page.Data[0].Connected {
		t.Fatalf("the second person's page: %d %s", w.Code, w.Body)
	}
	link := strings.TrimPrefix(b.Link("gh", Unit(first)), testPublic)
	if w := serveAs(b, http.MethodGet, link, "", second); w.Code != http.StatusForbidden {
		t.Fatalf("the second person opening the first's link: %d %s", w.Code, w.Body)
	}

	// A grant made before subjects were recorded is keyed by the email
	// alone ("p:pat@example.com"): it cannot say whose it was, so the
	// second person never gets it either; a caller without a subject
	// (a key minted before) still does, as before.
	legacy := &policy.Identity{KeyID: "old-key", Owner: email}
	if Unit(legacy) != "p:"+email {
		t.Fatalf("legacy unit %q", Unit(legacy))
	}
	connectAs(t, b, &policy.Identity{KeyID: email, Person: email}, "first-at-gh")
	if tok, err := tokenOf(t, b, legacy); err != nil || tok == "" {
		t.Fatalf("an old key's grant: %v", err)
	}
	if _, err := tokenOf(t, b, second); !errors.As(err, &nc) {
		t.Fatalf("the second person got the email's older grant: %v", err)
	}

	connectAs(t, b, second, "second-at-gh")
	for id, want := range map[*policy.Identity]string{first: "first-at-gh", second: "second-at-gh", secondKey: "second-at-gh"} {
		tok, err := tokenOf(t, b, id)
		if who, ok := as.Who(tok); err != nil || !ok || who != want {
			t.Fatalf("%s: acts as %q (%v), want %q", id.Subject, who, err, want)
		}
	}
	// The second person's disconnect forgets their own grant and the
	// email's older one; the first person's stays.
	if w := serveAs(b, http.MethodPost, Path+"disconnect/gh", "", second); w.Code != http.StatusOK {
		t.Fatalf("disconnect: %d %s", w.Code, w.Body)
	}
	for _, id := range []*policy.Identity{second, legacy} {
		if _, err := tokenOf(t, b, id); !errors.As(err, &nc) {
			t.Fatalf("after the disconnect, %s: %v", id.KeyID, err)
		}
	}
	if tok, err := tokenOf(t, b, first); err != nil || tok == "" {
		t.Fatalf("the first person's grant after the second's disconnect: %v", err)
	}
}
