package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/webhook"
)

// Approvals configure require_approval (docs/mcp-approvals.md).
type Approvals struct {
	// Store is the ledger's approval table, nil until the ledger is open
	// (or when it cannot hold approvals): a call that needs an approval is
	// then refused.
	Store func() ledger.MCPApprovalStore
	// Audit receives every request and decision.
	Audit audit.Recorder
	// Webhook is the team chat's incoming webhook the approval request is
	// posted to when the client cannot be asked; "" posts nothing.
	Webhook string
	// PublicURL is the gateway's address as the approver's browser reaches
	// it (https://gateway.example): the base of the message's links. ""
	// leaves the links out; the dashboard and the CLI still decide.
	PublicURL string
	// WorkspaceApproval is a workspace's mcp_approval list.
	WorkspaceApproval func(workspace string) []string
	// Timeout is how long a call waits when its server sets no
	// approval_timeout. Default 2 minutes.
	Timeout time.Duration
	// Poll is how often a waiting call reads its approval back, which is
	// how a decision made on another instance reaches it. Default 300 ms.
	Poll time.Duration
	// Client posts to the webhook; nil is a client with a 10 s timeout.
	Client *http.Client
}

// JSON-RPC codes of a call that needed an approval it did not get (see
// rpcerror.go for the others): in the implementation-defined server range,
// apart from -32000 and -32001, which the TypeScript SDK's clients read as
// a closed connection and their own timeout.
const (
	codeApprovalDenied  = -32030
	codeApprovalTimeout = -32031
)

// defaultApprovalTimeout is how long a call waits for its approval.
const defaultApprovalTimeout = 2 * time.Minute

// maxShownArgs bounds the canonical arguments an approval keeps for the
// approver to read; the hash covers them all.
const maxShownArgs = 4 << 10

// approvalRule reports whether id's call of tool on u needs an approval,
// and the version of the rules that say so: the server's require_approval
// and approval_timeout, the key's and the workspace's mcp_approval.
func (g *Gateway) approvalRule(id *policy.Identity, u *upstream, tool string) (version string, needed bool) {
	var ws []string
	if a := g.opts.Approvals; a != nil && a.WorkspaceApproval != nil && id.Workspace != "" {
		ws = a.WorkspaceApproval(id.Workspace)
	}
	server := u.cfg.Name
	needed = u.cfg.NeedsApproval(tool) || names(id.Limits.MCPApproval, server, tool) || names(ws, server, tool)
	if !needed {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "v1\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", server, strings.Join(u.cfg.RequireApproval, ","), g.approvalTimeout(u),
		strings.Join(id.Limits.MCPApproval, ","), strings.Join(ws, ","), u.cfg.ApprovalFrom)
	return hex.EncodeToString(h.Sum(nil))[:16], true
}

// names reports whether list has "server" or "server/tool".
func names(list []string, server, tool string) bool {
	return slices.Contains(list, server) || slices.Contains(list, server+"/"+tool)
}

func (g *Gateway) approvalTimeout(u *upstream) time.Duration {
	if u.cfg.ApprovalTimeout > 0 {
		return u.cfg.ApprovalTimeout
	}
	if a := g.opts.Approvals; a != nil && a.Timeout > 0 {
		return a.Timeout
	}
	return defaultApprovalTimeout
}

// awaitApproval holds a call of tool on u with canonical arguments args
// (shown: as people may read them, the firewall's redacted form) until a person approves it (nil), denies it, or the wait ends (a
// JSON-RPC error naming the tool and why, c.Outcome set). The approval is
// bound to the caller, server, tool, the arguments' hash, the rule's
// version and the expiry, and consumed by this call alone.
func (g *Gateway) awaitApproval(ctx context.Context, u *upstream, tool string, id *policy.Identity, args, shownArgs []byte, version string, ss *sdk.ServerSession, progress any, c *Call) error {
	refuse := func(o Outcome, code int64, format string, a ...any) error {
		c.Outcome = o
		return rpcError(code, "tool %q of MCP server %q: "+format, append([]any{tool, u.cfg.Name}, a...)...)
	}
	opts := g.opts.Approvals
	var store ledger.MCPApprovalStore
	if opts != nil && opts.Store != nil {
		store = opts.Store()
	}
	if store == nil {
		return refuse(OutcomeUnavailable, jsonrpc.CodeInternalError, "needs a person's approval, and the gateway has no ledger database to keep it in; try again later")
	}
	now := time.Now()
	timeout := g.approvalTimeout(u)
	a := ledger.MCPApproval{CreatedAt: now.UTC(), ExpiresAt: now.Add(timeout).UTC(), KeyID: id.KeyID, Person: id.PersonID(), Workspace: id.Workspace,
		Session: c.Session, Server: u.cfg.Name, Tool: tool, ArgsHash: approval.Hash(args), Args: storedArgs(shownArgs), PolicyVersion: version, State: ledger.ApprovalPending}
	a.ID, a.Secret = approval.NewID()
	c.Approval = a.ID
	approval.Bind(&a)
	d := &approval.Decider{Store: store, Audit: opts.Audit}
	// The row outlives the client: a cancelled wait still marks it.
	bg := context.WithoutCancel(ctx)
	if err := store.CreateMCPApproval(ctx, a); err != nil {
		return refuse(OutcomeUnavailable, jsonrpc.CodeInternalError, "needs a person's approval, and it could not be recorded (%v); try again later", err)
	}
	d.Record(bg, a, ledger.ApprovalPending, "")

	wake := make(chan struct{}, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	asked := ss
	if u.cfg.ApprovalFrom == "team" {
		asked = nil // never the calling client: it may be the agent itself
	}
	shown := question{total: len(shownArgs), raw: shownArgs}
	shown.args, shown.cut = argsExcerpt(shownArgs, questionArgs, perValueArgs)
	go g.askApprover(wctx, opts, d, a, shown, id, asked, wake)
	waiting := waitProgress(ss, progress, a, timeout)
	waiting(ctx)
	beat := time.NewTicker(progressBeat)
	defer beat.Stop()

	poll := opts.Poll
	if poll <= 0 {
		poll = 300 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(a.ExpiresAt))
	defer deadline.Stop()
	past := false // the deadline fired, and a decision had landed
	for {
		select {
		case <-ctx.Done():
			_ = g.expire(bg, d, a, approval.ViaCancelled)
			return refuse(OutcomeApprovalTimeout, codeApprovalTimeout, "the client stopped waiting for its approval (id %s)", a.ID)
		case <-deadline.C:
			// Expired unless a decision landed in the last poll interval;
			// a database that cannot say refuses the call.
			if err := g.expire(bg, d, a, approval.ViaTimeout); !errors.Is(err, ledger.ErrApprovalDecided) {
				return refuse(OutcomeApprovalTimeout, codeApprovalTimeout, "nobody approved the call within %s (approval %s); ask an approver, then call again", timeout, a.ID)
			}
			past = true
		case <-wake:
		case <-tick.C:
		case <-beat.C:
			waiting(ctx)
			continue
		}
		got, ok, err := store.MCPApprovalByID(bg, a.ID)
		if err != nil || !ok {
			if past {
				return refuse(OutcomeApprovalTimeout, codeApprovalTimeout, "its approval %s could not be read back in time (%v); call again", a.ID, err)
			}
			continue
		}
		switch got.State {
		case ledger.ApprovalApproved:
			used, err := store.ConsumeMCPApproval(bg, a.ID, time.Now())
			if err != nil || !used {
				return refuse(OutcomeApprovalTimeout, codeApprovalTimeout, "its approval %s expired before the call could use it; call again", a.ID)
			}
			got.State = ledger.ApprovalConsumed
			d.Record(bg, got, ledger.ApprovalConsumed, "")
			return nil
		case ledger.ApprovalDenied:
			return refuse(OutcomeApprovalDenied, codeApprovalDenied, "%s denied the call (approval %s); do not retry it unchanged", got.DecidedBy, a.ID)
		case ledger.ApprovalExpired, ledger.ApprovalConsumed:
			return refuse(OutcomeApprovalTimeout, codeApprovalTimeout, "approval %s is %s; call again for a new one", a.ID, got.State)
		}
	}
}

// progressBeat is how often a waiting call that asked for progress is
// told it still waits: clients that reset their timeout on progress keep
// waiting, and show why.
const progressBeat = 10 * time.Second

// waitProgress returns what tells the client that its call waits for
// approval a, as progress notifications under its token; nothing when it
// asked for none.
func waitProgress(ss *sdk.ServerSession, token any, a ledger.MCPApproval, timeout time.Duration) func(context.Context) {
	if ss == nil || token == nil {
		return func(context.Context) {}
	}
	return func(ctx context.Context) {
		_ = ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: time.Since(a.CreatedAt).Seconds(), Total: timeout.Seconds(),
			Message: fmt.Sprintf("waiting for a person to approve %s/%s (approval %s, until %s)", a.Server, a.Tool, a.ID, a.ExpiresAt.Format("15:04:05 UTC"))})
	}
}

// expire ends a wait nobody decided and audit-logs it; a decision that
// won the race stands (ledger.ErrApprovalDecided).
func (g *Gateway) expire(ctx context.Context, d *approval.Decider, a ledger.MCPApproval, via string) error {
	got, err := d.Store.DecideMCPApproval(ctx, a.ID, ledger.ApprovalExpired, "", via, time.Now())
	if err == nil {
		d.Record(ctx, got, ledger.ApprovalExpired, "")
	}
	return err
}

// askApprover asks the calling client's user through an elicitation when
// the client declared it can; when it cannot, or its user dismisses the
// question without answering, it posts the chat message. The dashboard and
// the CLI see every pending approval regardless.
func (g *Gateway) askApprover(ctx context.Context, opts *Approvals, d *approval.Decider, a ledger.MCPApproval, q question, id *policy.Identity, ss *sdk.ServerSession, wake chan<- struct{}) {
	if ss != nil && elicits(ss) {
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{
			Message: fmt.Sprintf("Modelgate: allow MCP tool %s/%s with arguments %s? (approval %s, expires %s)%s",
				a.Server, a.Tool, webhook.OneLine(q.args, len(q.args)), a.ID, a.ExpiresAt.Format("15:04:05 UTC"), q.note()),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		})
		if err == nil && (res.Action == "accept" || res.Action == "decline") {
			by := id.PersonID()
			if by == "" {
				by = id.KeyID
			}
			if _, err := d.Decide(context.WithoutCancel(ctx), a.ID, res.Action == "accept", by, approval.ViaElicitation, ""); err == nil {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
	g.postApproval(ctx, opts, a, q)
}

// elicits reports whether the client declared form elicitation.
func elicits(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// postApproval posts the approval request to the team chat with signed
// approve and deny links.
func (g *Gateway) postApproval(ctx context.Context, opts *Approvals, a ledger.MCPApproval, q question) {
	if opts.Webhook == "" {
		return
	}
	msg := approvalMessage(opts.PublicURL, a, q)
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := webhook.Post(pctx, client, opts.Webhook, msg); err != nil {
		g.obs.Ignored(a.Server, "approval request not posted to the chat webhook: "+err.Error())
	}
}

// question is the arguments as an approval's question shows them: args,
// an excerpt when cut, of total bytes; raw are the arguments it was made
// from, for chatArgs.
type question struct {
	total int
	args  string
	cut   bool
	raw   []byte
}

// chatArgsSent bounds the arguments as an approval's chat line sends
// them: with the caller (121), the server and tool names, two signed links
// and the fixed text, the line stays under Discord's 2,000 characters.
const chatArgsSent = 900

// chatArgs is q's arguments as a chat line sends them, escaped and never
// cut by a prefix, which would let an agent push the argument that matters
// out of sight. Escaping can make them several times longer than the
// excerpt's bound (a '<' is sent as "&lt;"), past a chat's length limit
// (Discord's 2,000 characters): the excerpt is then made again with
// smaller budgets, every argument still named, until what is sent fits
// chatArgsSent. The question it returns says whether anything was cut.
func chatArgs(q question) (string, question) {
	sent := webhook.CleanWhole(q.args)
	whole, per := questionArgs, perValueArgs
	for utf8.RuneCountInString(sent) > chatArgsSent && per > 8 && q.raw != nil {
		whole, per = whole/2, per/2
		text, cut := argsExcerpt(q.raw, whole, per)
		sent, q.cut = webhook.CleanWhole(text), q.cut || cut
	}
	return sent, q
}

func (q question) note() string {
	if !q.cut {
		return ""
	}
	return argsNote(q.total)
}

// approvalMessage is the chat line of approval a: who asks to call what
// with which arguments (q), until when, and the links.
func approvalMessage(publicURL string, a ledger.MCPApproval, q question) string {
	who := a.KeyID
	if a.Person != "" {
		who = a.Person + " (key " + a.KeyID + ")"
	}
	var b strings.Builder
	// The arguments are the agent's to choose: cleaned of chat controls,
	// which Slack reads even in a code span, so that text in them cannot
	// pose as the approve link or ping the channel.
	args, q := chatArgs(q)
	args = strings.ReplaceAll(args, "`", "'")
	fmt.Fprintf(&b, "MCP approval needed: %s wants to call %s/%s with `%s` (approval %s, expires %s).%s",
		webhook.Clean(who, 120), a.Server, a.Tool, args, a.ID, a.ExpiresAt.Format("15:04:05 UTC"), q.note())
	if base := strings.TrimRight(publicURL, "/"); base != "" {
		fmt.Fprintf(&b, " Approve: %s%s%s Deny: %s%s%s", base, ApprovalPath, approval.Sign(a.ID, true, a.ExpiresAt, a.Secret, a.Binding),
			base, ApprovalPath, approval.Sign(a.ID, false, a.ExpiresAt, a.Secret, a.Binding))
	} else {
		b.WriteString(" Decide in the dashboard or with `caddy modelgate approvals approve " + a.ID + "`.")
	}
	return b.String()
}

// ApprovalPath is where the chat message's links point:
// ApprovalPath + token (approval.LinkHandler).
const ApprovalPath = "/mcp-approvals/"

// storedArgs are canonical arguments kept for the approver to read: over
// maxShownArgs, every argument with its value cut (argsExcerpt).
func storedArgs(args []byte) string {
	if len(args) <= maxShownArgs {
		return string(args)
	}
	s, _ := argsExcerpt(args, maxShownArgs, storedPerValue)
	return s
}

// argsRefusal refuses arguments approval.Canonical rejects: an approval
// could not say what it approves.
func argsRefusal(tool, server string, err error) error {
	return rpcError(jsonrpc.CodeInvalidParams, "tool %q of MCP server %q needs approval, and its %v", tool, server, err)
}
