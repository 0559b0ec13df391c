package mcp

import (
	"context"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressGrace is how long a finished request's progress still reaches
// its client.
const progressGrace = 2 * time.Second

// progressTarget is where an upstream's progress for one request goes: the
// client session that asked, under the token it chose.
type progressTarget struct {
	ss    *sdk.ServerSession
	token any
}

// progressParams are the request params that carry a progress token.
type progressParams interface {
	GetProgressToken() any
	SetProgressToken(any)
}

// relayProgress gives a request that asked for progress a token of the
// gateway's own before it goes upstream (clients' tokens may collide across
// sessions sharing one upstream session) and routes the server's progress
// notifications for it back to ss under the client's token. The returned
// func forgets the token a moment after the request is done: the SDK
// client handles notifications apart from responses, so a server's last
// progress can be dispatched after its result.
func (g *Gateway) relayProgress(p progressParams, ss *sdk.ServerSession) func() {
	tok := p.GetProgressToken()
	if tok == nil || ss == nil {
		return func() {}
	}
	g.pmu.Lock()
	g.pseq++
	up := "mg-" + strconv.FormatUint(g.pseq, 10)
	g.progress[up] = progressTarget{ss: ss, token: tok}
	g.pmu.Unlock()
	p.SetProgressToken(up)
	return func() {
		time.AfterFunc(progressGrace, func() {
			g.pmu.Lock()
			delete(g.progress, up)
			g.pmu.Unlock()
		})
	}
}

// onProgress forwards an upstream progress notification to the client
// whose request it belongs to; one for no live request is dropped.
func (g *Gateway) onProgress(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
	up, _ := req.Params.ProgressToken.(string)
	g.pmu.Lock()
	t, ok := g.progress[up]
	g.pmu.Unlock()
	if !ok {
		return
	}
	p := *req.Params
	p.ProgressToken = t.token
	_ = t.ss.NotifyProgress(ctx, &p)
}
