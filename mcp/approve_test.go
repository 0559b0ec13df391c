package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// chatSink is a team chat's incoming webhook: it keeps every text posted.
type chatSink struct {
	mu    sync.Mutex
	texts []string
	got   chan string
}

func newChatSink(t *testing.T) (*chatSink, string) {
	c := &chatSink{got: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		c.mu.Lock()
		c.texts = append(c.texts, body.Text)
		c.mu.Unlock()
		c.got <- body.Text
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *chatSink) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-c.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no approval request reached the chat")
		return ""
	}
}

var linkRE = regexp.MustCompile(`(Approve|Deny): (\S+)`)

// links are the approve and deny links of a chat message.
func links(t *testing.T, msg string) (approve, deny string) {
	t.Helper()
	for _, m := range linkRE.FindAllStringSubmatch(msg, -1) {
		if m[1] == "Approve" {
			approve = m[2]
		} else {
			deny = m[2]
		}
	}
	if approve == "" || deny == "" {
		t.Fatalf("message without links: %s", msg)
	}
	return approve, deny
}

// click opens a link in a browser signed in as bob, who approves others'
// calls: the page, then its button's POST.
func click(t *testing.T, link string) (int, string) {
	t.Helper()
	return clickAs(t, link, "bob")
}

// testApprovers stand in for llm_auth on the links' POST: the bearer
// names who is signed in.
var testApprovers = map[string]approval.Approver{
	"bob":     {Person: "bob@example.com", KeyID: "bob@example.com"},
	"alice":   {Person: "alice@example.com", KeyID: "k-alice-2"},
	"agent":   {KeyID: "k-agent"},
	"auditor": {Person: "carol@example.com", KeyID: "carol@example.com", Auditor: true},
	"admin":   {KeyID: "admin-key", Admin: true},
}

func testApprover(r *http.Request) *approval.Approver {
	ap, ok := testApprovers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		return nil
	}
	return &ap
}

// clickAs is click signed in as who ("" nobody).
func clickAs(t *testing.T, link, who string) (int, string) {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(page)
	}
	if !strings.Contains(string(page), `<button type="button" id="decide">`) {
		t.Fatalf("the link's page has no button: %s", page)
	}
	req, _ := http.NewRequest(http.MethodPost, link, nil)
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+who)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

type approvalRig struct {
	g     *Gateway
	gw    *httptest.Server
	store ledger.MCPApprovalStore
	chat  *chatSink
	obs   *recObs
}

func sqliteApprovals(t *testing.T) ledger.MCPApprovalStore {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(ledger.MCPApprovalStore)
}

// newApprovalRig serves the upstream's echo tool, which needs approval,
// with the chat links mounted where the public URL points.
func newApprovalRig(t *testing.T, store ledger.MCPApprovalStore, timeout time.Duration, edit ...func(*modellist.MCPServer)) *approvalRig {
	up := upstreamServer(t, "tok")
	r := &approvalRig{store: store, obs: &recObs{}}
	var hook string
	r.chat, hook = newChatSink(t)
	mux := http.NewServeMux()
	r.gw = httptest.NewServer(mux)
	t.Cleanup(r.gw.Close)
	server := &modellist.MCPServer{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL,
		Headers: map[string]string{"Authorization": "Bearer tok"}, RequireApproval: []string{"echo"}, ApprovalTimeout: timeout}
	for _, e := range edit {
		e(server)
	}
	r.g = New(Options{Observer: r.obs, Servers: []*modellist.MCPServer{server},
		Approvals: &Approvals{Store: func() ledger.MCPApprovalStore { return store }, Webhook: hook, PublicURL: r.gw.URL, Poll: 50 * time.Millisecond}})
	r.g.Start()
	t.Cleanup(r.g.Close)
	mux.Handle(approval.Path, &approval.LinkHandler{Store: func() ledger.MCPApprovalStore { return store },
		Decider: func(s ledger.MCPApprovalStore) *approval.Decider { return &approval.Decider{Store: s} }, Approver: testApprover})
	mux.Handle("/", withID(r.g, map[string]*policy.Identity{"alice": {KeyID: "k-alice", Person: "alice@example.com"},
		// A key minted for alice (sign-in, device flow, MCP OAuth): its
		// person is its Owner.
		"alice-minted": {KeyID: "k-alice-minted", Owner: "alice@example.com", Role: policy.RoleUser}}))
	return r
}

type callResult struct {
	res *sdk.CallToolResult
	err error
}

func callAsync(cs *sdk.ClientSession, text string) chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": text}})
		ch <- callResult{res, err}
	}()
	return ch
}

func rpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

// TestApprovalThroughChatLink: a call of a tool with require_approval
// waits; the chat gets a message with signed links; the approve link runs
// the call once. Replaying the link, and a second call (same or changed
// arguments) approved by the first call's link, are refused.
func TestApprovalThroughChatLink(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute)
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)

	first := callAsync(cs, "hi")
	msg := r.chat.next(t)
	if !strings.Contains(msg, "alice@example.com") || !strings.Contains(msg, "internal/echo") || !strings.Contains(msg, `{"text":"hi"}`) {
		t.Fatalf("message %q does not say who calls what", msg)
	}
	approve, deny := links(t, msg)
	// A link preview fetches the URL: the GET alone decides nothing.
	if resp, err := http.Get(approve); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %v %v", resp, err)
	}
	select {
	case got := <-first:
		t.Fatalf("the call ran on a GET of its link: %+v", got)
	case <-time.After(200 * time.Millisecond):
	}
	if code, page := click(t, approve); code != http.StatusOK || !strings.Contains(page, "Approved") {
		t.Fatalf("approve: %d %s", code, page)
	}
	got := <-first
	if got.err != nil || got.res.IsError || got.res.Content[0].(*sdk.TextContent).Text != "echo:hi" {
		t.Fatalf("approved call: %+v %v", got.res, got.err)
	}
	// Replaying the approval: refused, it was used.
	if code, page := click(t, approve); code != http.StatusConflict || !strings.Contains(page, "used") {
		t.Fatalf("replayed approve link: %d %s", code, page)
	}
	if code, _ := click(t, deny); code != http.StatusConflict {
		t.Fatalf("deny after use: %d", code)
	}

	// The same call again needs its own approval: the old link decides
	// nothing, the new call's deny link refuses it.
	second := callAsync(cs, "hi")
	msg2 := r.chat.next(t)
	approve2, deny2 := links(t, msg2)
	if approve2 == approve {
		t.Fatal("a second call got the first call's link")
	}
	if code, _ := click(t, approve); code != http.StatusConflict {
		t.Fatalf("the first approval decided the second call: %d", code)
	}
	if code, _ := click(t, deny2); code != http.StatusOK {
		t.Fatalf("deny: %d", code)
	}
	got = <-second
	if rpcCode(got.err) != codeApprovalDenied || !strings.Contains(got.err.Error(), `tool "echo" of MCP server "internal"`) || !strings.Contains(got.err.Error(), "denied") {
		t.Fatalf("denied call: %+v %v", got.res, got.err)
	}

	// Changed arguments: a new approval; a link whose token was made for
	// another binding (the first call's, re-aimed at this id) is refused.
	third := callAsync(cs, "rm -rf /")
	msg3 := r.chat.next(t)
	if !strings.Contains(msg3, `"rm -rf /"`) {
		t.Fatalf("message %q lacks the changed arguments", msg3)
	}
	approve3, _ := links(t, msg3)
	l3, _ := approval.Parse(approve3[strings.Index(approve3, approval.Path)+len(approval.Path):])
	a1, _ := r.store.MCPApprovals(context.Background(), ledger.ApprovalConsumed, 1)
	forged := approval.Sign(l3.ID, true, l3.Expires, a1[0].Secret, a1[0].Binding)
	if code, _ := click(t, r.gw.URL+approval.Path+forged); code != http.StatusNotFound {
		t.Fatalf("a token bound to other arguments decided: %d", code)
	}
	if code, _ := click(t, approve3); code != http.StatusOK {
		t.Fatalf("approve 3: %d", code)
	}
	if got := <-third; got.err != nil || got.res.Content[0].(*sdk.TextContent).Text != "echo:rm -rf /" {
		t.Fatalf("third call: %+v %v", got.res, got.err)
	}

	r.obs.mu.Lock()
	defer r.obs.mu.Unlock()
	var outcomes []string
	for _, c := range r.obs.calls {
		outcomes = append(outcomes, string(c.Outcome))
	}
	if strings.Join(outcomes, ",") != "ok,approval_denied,ok" {
		t.Fatalf("recorded outcomes %v", outcomes)
	}
}

// TestApprovalTimeout: nobody decides; the call ends at approval_timeout
// with an error naming the tool, and the approval is expired.
func TestApprovalTimeout(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), 300*time.Millisecond)
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)
	got := <-callAsync(cs, "hi")
	if rpcCode(got.err) != codeApprovalTimeout || !strings.Contains(got.err.Error(), `tool "echo"`) || !strings.Contains(got.err.Error(), "nobody approved") {
		t.Fatalf("timed-out call: %v", got.err)
	}
	approve, _ := links(t, r.chat.next(t))
	if code, page := click(t, approve); code != http.StatusConflict || !strings.Contains(page, "Expired") {
		t.Fatalf("a link after the wait: %d %s", code, page)
	}
}

// TestApprovalByElicitation: a client that declared elicitation is asked
// itself; accept runs the call, decline refuses it, and no chat message
// is posted.
func TestApprovalByElicitation(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute)
	var mu sync.Mutex
	answer, asked := "accept", ""
	cs := connectWith(t, r.gw.URL+"/mcp", "alice", &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = req.Params.Message
		return &sdk.ElicitResult{Action: answer}, nil
	}})
	waitTools(t, cs, 2)
	if got := <-callAsync(cs, "hi"); got.err != nil || got.res.Content[0].(*sdk.TextContent).Text != "echo:hi" {
		t.Fatalf("accepted: %+v %v", got.res, got.err)
	}
	mu.Lock()
	if !strings.Contains(asked, "internal/echo") || !strings.Contains(asked, `{"text":"hi"}`) {
		t.Errorf("elicitation message %q", asked)
	}
	answer = "decline"
	mu.Unlock()
	if got := <-callAsync(cs, "hi"); rpcCode(got.err) != codeApprovalDenied || !strings.Contains(got.err.Error(), "alice@example.com denied") {
		t.Fatalf("declined: %v", got.err)
	}
	r.chat.mu.Lock()
	defer r.chat.mu.Unlock()
	if len(r.chat.texts) != 0 {
		t.Fatalf("the chat was asked too: %q", r.chat.texts)
	}
	done, _ := r.store.MCPApprovals(context.Background(), "", 10)
	if len(done) != 2 || done[0].State != ledger.ApprovalDenied || done[1].State != ledger.ApprovalConsumed || done[1].Via != approval.ViaElicitation {
		t.Fatalf("approvals %+v", done)
	}
}

// TestApprovalAcrossInstances: with PostgreSQL, a call waiting on one
// instance runs within a second of an approval made on another (its own
// connection pool, as another process would have).
func TestApprovalAcrossInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	open := func() ledger.MCPApprovalStore {
		s, err := ledger.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.(ledger.MCPApprovalStore)
	}
	waiting, other := open(), open()
	r := newApprovalRig(t, waiting, time.Minute)
	r.g.opts.Approvals.Poll = 0 // the default, as deployed
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)
	ch := callAsync(cs, "hi")
	r.chat.next(t)
	pending, err := other.MCPApprovals(context.Background(), ledger.ApprovalPending, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending on the other instance: %+v %v", pending, err)
	}
	d := &approval.Decider{Store: other}
	start := time.Now()
	if _, err := d.Decide(context.Background(), pending[0].ID, true, "bob", approval.ViaAdmin, ""); err != nil {
		t.Fatal(err)
	}
	got := <-ch
	if took := time.Since(start); got.err != nil || took > time.Second {
		t.Fatalf("call after a remote approval: %v, %s", got.err, took)
	} else {
		t.Logf("the waiting instance ran the call %s after the other approved it", took)
	}
	if _, err := d.Decide(context.Background(), pending[0].ID, true, "bob", approval.ViaAdmin, ""); !errors.Is(err, ledger.ErrApprovalDecided) {
		t.Fatalf("deciding twice: %v", err)
	}
}

// TestApprovalFromTeam: with approval_from: team the calling client is
// never asked, though it could be; the chat is. A call that asked for
// progress is told at once that it waits for approval.
func TestApprovalFromTeam(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute, func(s *modellist.MCPServer) { s.ApprovalFrom = "team" })
	progress := make(chan string, 8)
	cs := connectWith(t, r.gw.URL+"/mcp", "alice", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the calling client was asked under approval_from: team")
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { progress <- req.Params.Message },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitTools(t, cs, 2)
	done := make(chan callResult, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}}
		p.SetProgressToken("tok-1")
		res, err := cs.CallTool(ctx, p)
		done <- callResult{res, err}
	}()
	approve, _ := links(t, r.chat.next(t))
	select {
	case msg := <-progress:
		if !strings.Contains(msg, "waiting for a person to approve internal/echo") {
			t.Errorf("progress %q", msg)
		}
	case <-ctx.Done():
		t.Fatal("no progress while waiting")
	}
	if code, _ := click(t, approve); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if got := <-done; got.err != nil || got.res.Content[0].(*sdk.TextContent).Text != "echo:hi" {
		t.Fatalf("call: %+v %v", got.res, got.err)
	}
}

// TestApprovalMessageQuotesArguments: the arguments, which the agent
// chooses, sit in one code span (backticks in them replaced), so text in
// them cannot become a link that poses as the approve link.
func TestApprovalMessageQuotesArguments(t *testing.T) {
	a := ledger.MCPApproval{ID: "apr_1", KeyID: "k", Server: "prod", Tool: "deploy", Args: "{\"note\":\"` Approve: https://evil.example/x `\"}", Secret: "00", Binding: "b"}
	msg := approvalMessage("https://gw.example", a, question{total: len(a.Args), args: a.Args})
	if !strings.Contains(msg, "with `{\"note\":\"' Approve: https://evil.example/x '\"}` (approval apr_1") {
		t.Fatalf("message %q", msg)
	}
	if !strings.Contains(msg, " Approve: https://gw.example"+approval.Path+"v1.") {
		t.Fatalf("message %q lacks the real link", msg)
	}
}

// TestApprovalClientGoesAway: a client that cancels its waiting call
// leaves the approval expired (via cancelled), so its link decides
// nothing later.
func TestApprovalClientGoesAway(t *testing.T) {
	store := sqliteApprovals(t)
	r := newApprovalRig(t, store, time.Minute)
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
		done <- err
	}()
	approve, _ := links(t, r.chat.next(t))
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	var got []ledger.MCPApproval
	if !testwait.Until(func() bool {
		got, _ = store.MCPApprovals(context.Background(), ledger.ApprovalExpired, 10)
		return len(got) == 1
	}) || got[0].Via != approval.ViaCancelled {
		t.Fatalf("approvals after the client left: %+v", got)
	}
	if code, _ := click(t, approve); code != http.StatusConflict {
		t.Fatalf("the link after the client left: %d", code)
	}
}

// TestApprovalMessageEscapesChatControls (H10-4): arguments that spell a
// Slack ping or labelled link (parsed even inside a code span) or a
// markdown link reach the chat as text.
func TestApprovalMessageEscapesChatControls(t *testing.T) {
	args := `{"env":"prod <!channel> <http://evil.example/approve|Approve (safe)> [Approve](http://evil.example/b)"}`
	a := ledger.MCPApproval{ID: "apr_1", KeyID: "k", Server: "prod", Tool: "deploy", Args: args, Secret: "00", Binding: "b"}
	msg := approvalMessage("https://gw.example", a, question{total: len(args), args: args})
	if strings.ContainsAny(msg, "<>") || strings.Contains(msg, "](") || !strings.Contains(msg, "&lt;!channel&gt;") {
		t.Fatalf("message %q", msg)
	}
}

// TestApprovalLinkNeedsAnotherSignedInPerson (H10-5): the chat link's
// POST decides nothing without an approver signed in, nor for the
// caller's own person (another key of theirs included), an auditor, or a
// key of no one (which may be an agent's); another person decides, and
// the decision is theirs.
func TestApprovalLinkNeedsAnotherSignedInPerson(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute, func(s *modellist.MCPServer) { s.ApprovalFrom = "team" })
	cs := connect(t, r.gw.URL+"/mcp", "alice")
	waitTools(t, cs, 2)
	call := callAsync(cs, "deploy prod")
	approve, _ := links(t, r.chat.next(t))
	for who, want := range map[string]int{"": http.StatusUnauthorized, "alice": http.StatusForbidden, "auditor": http.StatusForbidden, "agent": http.StatusForbidden} {
		if code, page := clickAs(t, approve, who); code != want {
			t.Errorf("%q approving: %d %s", who, code, page)
		}
	}
	select {
	case got := <-call:
		t.Fatalf("the call ran without another person's approval: %+v", got)
	default:
	}
	if code, page := clickAs(t, approve, "bob"); code != http.StatusOK || !strings.Contains(page, "Approved") {
		t.Fatalf("bob approving: %d %s", code, page)
	}
	if got := <-call; got.err != nil {
		t.Fatal(got.err)
	}
	a, _ := r.store.MCPApprovals(context.Background(), ledger.ApprovalConsumed, 1)
	if len(a) != 1 || a[0].DecidedBy != "bob@example.com" {
		t.Fatalf("decided by %+v", a)
	}
}

// TestApprovalLinkRefusesTheCallersMintedKeys (H12-1): a call made with a
// minted key (Owner set, Person empty) belongs to its person: another of
// their keys may not approve it, and the chat names the person. Another
// person may.
func TestApprovalLinkRefusesTheCallersMintedKeys(t *testing.T) {
	r := newApprovalRig(t, sqliteApprovals(t), time.Minute, func(s *modellist.MCPServer) { s.ApprovalFrom = "team" })
	cs := connect(t, r.gw.URL+"/mcp", "alice-minted")
	waitTools(t, cs, 2)
	call := callAsync(cs, "deploy prod")
	msg := r.chat.next(t)
	if !strings.Contains(msg, "alice@example.com (key k-alice-minted)") {
		t.Errorf("the chat message does not name the person: %s", msg)
	}
	approve, _ := links(t, msg)
	if code, page := clickAs(t, approve, "alice"); code != http.StatusForbidden || !strings.Contains(page, "This is your own call") {
		t.Fatalf("alice approving her own agent's call with another key: %d %s", code, page)
	}
	if code, page := clickAs(t, approve, "bob"); code != http.StatusOK || !strings.Contains(page, "Approved") {
		t.Fatalf("bob approving: %d %s", code, page)
	}
	if got := <-call; got.err != nil {
		t.Fatal(got.err)
	}
}

// TestApprovalMessageNamesEveryArgumentOnceEscaped: escaping can make the
// arguments several times longer than the excerpt's bound. The chat line
// then shows a smaller excerpt that still names every argument, and says
// it is shortened; it never cuts a prefix, which would hide the argument
// that matters behind long ones (an agent chooses them all).
func TestApprovalMessageNamesEveryArgumentOnceEscaped(t *testing.T) {
	for name, raw := range map[string]string{
		"long values first": `{"a0":"` + strings.Repeat("<", 200) + `","a1":"` + strings.Repeat("&", 200) + `","a2":"` + strings.Repeat(">", 200) + `","zcmd":"rm -rf /"}`,
		"one escaped value": `{"cmd":"echo ` + strings.Repeat("&", 300) + `; rm -rf /"}`,
	} {
		shown := question{total: len(raw), raw: []byte(raw)}
		shown.args, shown.cut = argsExcerpt(shown.raw, questionArgs, perValueArgs)
		a := ledger.MCPApproval{ID: "apr_1", KeyID: "k", Server: "prod", Tool: "deploy", Args: raw, Secret: "00", Binding: "b"}
		msg := approvalMessage("https://gw.example", a, shown)
		if n := utf8.RuneCountInString(msg); n > 2000 {
			t.Errorf("%s: a message of %d characters, past Discord's limit", name, n)
		}
		if !strings.Contains(msg, "Arguments shortened here") {
			t.Errorf("%s: the message does not say the arguments are shortened: %q", name, msg)
		}
		if name == "long values first" && !strings.Contains(msg, `"zcmd":"rm -rf /"`) {
			t.Errorf("%s: the last argument is hidden: %q", name, msg)
		}
		if strings.ContainsAny(msg, "<>") {
			t.Errorf("%s: a chat control left: %q", name, msg)
		}
	}
	// Arguments whose escaped form fits are sent whole, as before.
	raw := `{"cmd":"echo ` + strings.Repeat("&", 120) + `; rm -rf /"}`
	shown := question{total: len(raw), raw: []byte(raw), args: raw}
	msg := approvalMessage("https://gw.example", ledger.MCPApproval{ID: "apr_1", KeyID: "k", Server: "p", Tool: "t", Args: raw, Secret: "00", Binding: "b"}, shown)
	if !strings.Contains(msg, "; rm -rf /") || strings.Contains(msg, "shortened") {
		t.Errorf("arguments that fit were cut: %q", msg)
	}
}
