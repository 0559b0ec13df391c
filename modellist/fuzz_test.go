package modellist

import (
	"os"
	"strings"
	"testing"
)

// fuzzSecret is what every environment variable holds during fuzzing; it
// must never come back in an error or warning.
const fuzzSecret = "fuzz-secret-7f3a9"

// FuzzParse checks that Parse never panics, that it returns either a
// config or an error, never both, that a config's invariants hold, and that
// secrets read from the environment never reach a message.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/models.example.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(one("{model: echo/x}")))
	f.Add([]byte(one("{model: ollama/x, api_base: 'http://h:11434/v1'}") + "model_aliases: {'claude-*': m}\n"))
	f.Add([]byte(one("{model: anthropic/c, api_key: os.environ/K, extra_headers: {X-A: os.environ/H}}") +
		"router_settings: {fallbacks: [{m: [m]}]}\n"))
	f.Add([]byte(one("{model: echo/x}") + "mcp_servers:\n  paid: {url: 'http://h/mcp', cost_per_call: 0.0125}\n"))
	getenv := func(name string) (string, bool) {
		if name == "UNSET" {
			return "", false
		}
		return fuzzSecret, true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, warns, err := Parse(data, "fuzz.yaml", getenv)
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v", c != nil, err)
		}
		if !strings.Contains(string(data), fuzzSecret) {
			out := strings.Join(warns, "\n")
			if err != nil {
				out += err.Error()
			}
			if strings.Contains(out, fuzzSecret) {
				t.Fatalf("secret in message:\n%s", out)
			}
		}
		if err != nil {
			return
		}
		if len(c.Deployments) == 0 {
			t.Fatal("config without deployments")
		}
		ids := map[string]bool{}
		for _, d := range c.Deployments {
			if d.Alias == "" || d.Model == "" || d.Weight <= 0 || ids[d.ID] {
				t.Fatalf("bad deployment %s (weight %v)", d, d.Weight)
			}
			ids[d.ID] = true
			if _, ok := lookupProvider(d.Provider); !ok {
				t.Fatalf("unknown provider %q accepted", d.Provider)
			}
			if (d.Kind == KindEcho) != (d.APIBase == "") {
				t.Fatalf("api_base %q for kind %s", d.APIBase, d.Kind)
			}
			if a, ok := c.Resolve(d.Alias); !ok || a != d.Alias {
				t.Fatalf("Resolve(%q) = %q, %v", d.Alias, a, ok)
			}
		}
		for _, a := range c.Aliases() {
			if len(deploymentsOf(c, a)) == 0 {
				t.Fatalf("alias %q has no deployments", a)
			}
		}
		for _, fb := range c.Router.Fallbacks {
			for _, to := range fb.To {
				if deploymentsOf(c, to) == nil {
					t.Fatalf("fallback to unknown alias %q", to)
				}
			}
		}
		for _, ma := range c.ModelAliases {
			if deploymentsOf(c, ma.Alias) == nil {
				t.Fatalf("model_alias to unknown alias %q", ma.Alias)
			}
		}
	})
}
