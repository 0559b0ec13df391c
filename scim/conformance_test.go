package scim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
)

// fixture is a recorded provisioning sequence (testdata/*.json).
type fixture struct {
	IdP   string `json:"idp"`
	Steps []struct {
		Name    string            `json:"name"`
		Method  string            `json:"method"`
		Path    string            `json:"path"`
		Token   string            `json:"token"`
		Body    json.RawMessage   `json:"body"`
		Status  int               `json:"status"`
		Expect  map[string]any    `json:"expect"`
		Absent  []string          `json:"absent"`
		Save    map[string]string `json:"save"`
		Revoke  []string          `json:"revoke"`
		Regrant []string          `json:"regrant"`
	} `json:"steps"`
}

// lookup walks a dotted path (numbers index arrays) through v.
func lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

type fakeKeys struct {
	mu               sync.Mutex
	revoked, regrant []string
}

func (f *fakeKeys) Revoke(_ context.Context, p Person) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, p.UserName)
	return 1, nil
}

func (f *fakeKeys) Regrant(_ context.Context, p Person, groups []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regrant = append(f.regrant, p.UserName+":"+strings.Join(groups, ","))
	return 1, nil
}

func (f *fakeKeys) take() (rv, rg []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rv, rg, f.revoked, f.regrant = f.revoked, f.regrant, nil, nil
	return rv, rg
}

type fixedStore struct{ s ledger.ControlStore }

func (f fixedStore) WaitStore(context.Context) ledger.ControlStore { return f.s }

type events struct {
	mu  sync.Mutex
	all []audit.Event
}

func (e *events) Record(_ context.Context, ev audit.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// TestConformanceFixtures replays the Okta and Entra ID request sequences
// against the handler over a real SQLite ledger.
func TestConformanceFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 2 {
		t.Fatalf("fixtures: %v", files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			keys := &fakeKeys{}
			ev := &events{}
			const token = "scim-test-token-0123456789"
			srv := httptest.NewServer(&Handler{Token: token, Source: fixedStore{store.(ledger.ControlStore)}, Keys: keys, Audit: ev})
			defer srv.Close()
			Replay(t, srv.URL, token, file, func() ([]string, []string) { return keys.take() })
			ev.mu.Lock()
			defer ev.mu.Unlock()
			actions := map[string]bool{}
			for _, e := range ev.all {
				actions[e.Action] = true
				for k, v := range e.Fields {
					if audit.Secret(k) || strings.Contains(v, "1mz050nq") {
						t.Errorf("audit event %s carries a secret field %s=%s", e.Action, k, v)
					}
				}
			}
			for _, a := range []string{"scim.user.create", "scim.user.deactivate", "scim.group.create", "scim.group.update", "scim.group.delete"} {
				if !actions[a] {
					t.Errorf("no %s audit event; got %v", a, actions)
				}
			}
		})
	}
}

// Replay runs a fixture's steps against base; sideEffects, when not nil,
// returns the revokes and regrants since the last step.
func Replay(t *testing.T, base, token, file string, sideEffects func() (revoked, regrant []string)) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	subst := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		return s
	}
	for _, st := range fx.Steps {
		var body io.Reader
		if len(st.Body) > 0 {
			body = bytes.NewReader([]byte(subst(string(st.Body))))
		}
		req, _ := http.NewRequest(st.Method, base+subst(st.Path), body)
		tok := token
		if st.Token != "" {
			tok = st.Token
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != nil {
			req.Header.Set("Content-Type", "application/scim+json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != st.Status {
			t.Fatalf("%s: %s %s: status %d, want %d: %s", st.Name, st.Method, st.Path, resp.StatusCode, st.Status, b)
		}
		if ct := resp.Header.Get("Content-Type"); len(b) > 0 && ct != "application/scim+json" {
			t.Errorf("%s: Content-Type %q", st.Name, ct)
		}
		var got any
		if len(b) > 0 {
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: body not JSON: %s", st.Name, b)
			}
		}
		for path, want := range st.Expect {
			v, ok := lookup(got, path)
			if s, isStr := want.(string); isStr {
				want = subst(s)
			}
			if w, isList := want.([]any); isList && len(w) == 0 && (v == nil || reflect.DeepEqual(v, []any{})) {
				continue
			}
			if !ok || !reflect.DeepEqual(v, want) {
				t.Errorf("%s: %s = %v, want %v\nbody: %s", st.Name, path, v, want, b)
			}
		}
		for _, path := range st.Absent {
			if _, ok := lookup(got, path); ok {
				t.Errorf("%s: %s should not be stored or answered: %s", st.Name, path, b)
			}
		}
		for k, path := range st.Save {
			v, _ := lookup(got, path)
			s, _ := v.(string)
			if s == "" {
				t.Fatalf("%s: no %s to save: %s", st.Name, path, b)
			}
			vars[k] = s
		}
		if sideEffects != nil {
			rv, rg := sideEffects()
			if len(st.Revoke) > 0 || len(rv) > 0 {
				if !reflect.DeepEqual(rv, st.Revoke) {
					t.Errorf("%s: revoked %v, want %v", st.Name, rv, st.Revoke)
				}
			}
			if len(st.Regrant) > 0 || len(rg) > 0 {
				if !reflect.DeepEqual(rg, st.Regrant) {
					t.Errorf("%s: regranted %v, want %v", st.Name, rg, st.Regrant)
				}
			}
		}
	}
}
