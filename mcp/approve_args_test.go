package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// longArgs are arguments whose name that sorts first has a long value:
// a prefix of the canonical object would hide zcmd.
func longArgs() map[string]any {
	return map[string]any{"aaaa": strings.Repeat("harmless ", 100), "text": "hi", "zcmd": "rm -rf /srv/prod"}
}

// TestApprovalQuestionNamesEveryArgument: an agent cannot push the
// argument that matters past the cut with a long one that sorts first.
// The chat message and the elicitation name every argument, cut each
// value on its own, and say that they did and where the full call is.
func TestApprovalQuestionNamesEveryArgument(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute)
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)
	go func() {
		_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-echo", Arguments: longArgs()})
	}()
	msg := r.chat.next(t)
	for _, want := range []string{`"zcmd":"rm -rf /srv/prod"`, `"text":"hi"`, `"aaaa":"harmless harmless`, "Arguments shortened here", "link's page and the dashboard show the full call"} {
		if !strings.Contains(msg, want) {
			t.Errorf("chat message lacks %q: %s", want, msg)
		}
	}
	approve, _ := links(t, msg)
	if _, page := click(t, approve); !strings.Contains(page, strings.Repeat("harmless ", 99)) || !strings.Contains(page, "rm -rf /srv/prod") {
		t.Errorf("the link's page does not show the full call: %s", page)
	}

	var mu sync.Mutex
	asked := ""
	ecs := connectWith(t, r.gw.URL+"/mcp", "alice", &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = req.Params.Message
		return &sdk.ElicitResult{Action: "decline"}, nil
	}})
	waitTools(t, ecs, 2)
	_, _ = ecs.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-echo", Arguments: longArgs()})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(asked, `"zcmd":"rm -rf /srv/prod"`) || !strings.Contains(asked, "Arguments shortened here") {
		t.Errorf("elicitation %q hides an argument or the cut", asked)
	}
}

// TestArgsExcerpt: short arguments are shown whole; long ones by every
// name, each value cut alone; past maxArgNames the rest are counted.
func TestArgsExcerpt(t *testing.T) {
	if s, cut := argsExcerpt([]byte(`{"a":1}`), 600, 120); s != `{"a":1}` || cut {
		t.Errorf("short: %q %v", s, cut)
	}
	long := `{"a":"` + strings.Repeat("é", 300) + `","b":{"c":[1,2,3]},"z":"x"}`
	s, cut := argsExcerpt([]byte(long), 100, 10)
	if !cut || s != `{"a":"ééééééééé…,"b":{"c":[1,2,…,"z":"x"}` {
		t.Errorf("long: %q %v", s, cut)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('a'+i/26)) + string(rune('a'+i%26)) + `":"v"`)
	}
	b.WriteByte('}')
	if s, cut := argsExcerpt([]byte(b.String()), 100, 10); !cut || !strings.HasSuffix(s, ",… 36 more arguments}") {
		t.Errorf("many: %q %v", s, cut)
	}
}

func FuzzArgsExcerpt(f *testing.F) {
	f.Add([]byte(`{"a":"` + strings.Repeat("x", 50) + `","b":2}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, args []byte) {
		s, cut := argsExcerpt(args, 20, 5)
		if !cut && s != string(args) {
			t.Fatalf("uncut %q from %q", s, args)
		}
	})
}
