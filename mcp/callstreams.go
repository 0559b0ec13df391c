package mcp

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// callStreams is what one Streamable HTTP connection's answerGuard knows
// across requests: which call each event id seen on a call's stream
// belongs to, so a GET resuming that stream is checked as the call's
// (every other GET is the standalone stream), and how many responses the
// standalone stream carried, whose first few are logged.
type callStreams struct {
	// log reports a dropped message; called at most maxDropLogs times,
	// then once to say the rest go unlogged.
	log func(why string)

	mu    sync.Mutex
	owner map[string]jsonrpc.ID
	order []string // owner's keys, oldest first, at most maxStreamIDs
	drops int
}

const (
	// maxStreamIDs bounds the event ids remembered: enough for every
	// call in flight on a connection to resume its stream.
	maxStreamIDs = 1024
	// maxStreamIDLen bounds one remembered event id: an SSE event may be
	// 16 MiB, and a server's ids that long would make the map hold
	// maxStreamIDs of them. Real servers' ids are short; a stream of
	// longer ids just cannot be resumed as its call's.
	maxStreamIDLen = 256
	maxDropLogs    = 10
)

func newCallStreams(log func(why string)) *callStreams {
	return &callStreams{log: log, owner: map[string]jsonrpc.ID{}}
}

// add records that event evID was sent on call's stream.
func (c *callStreams) add(evID string, call jsonrpc.ID) {
	if c == nil || len(evID) > maxStreamIDLen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.owner[evID]; !seen {
		if len(c.order) == maxStreamIDs {
			delete(c.owner, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, evID)
	}
	c.owner[evID] = call
}

// resumes is the call whose stream a GET with Last-Event-ID lastID
// resumes, or false for the standalone stream.
func (c *callStreams) resumes(lastID string) (jsonrpc.ID, bool) {
	if c == nil || lastID == "" {
		return jsonrpc.ID{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	call, ok := c.owner[lastID]
	return call, ok
}

// dropped counts a response dropped from the standalone stream, and logs
// the first few.
func (c *callStreams) dropped(id jsonrpc.ID) {
	if c == nil || c.log == nil {
		return
	}
	c.mu.Lock()
	c.drops++
	n := c.drops
	c.mu.Unlock()
	switch {
	case n <= maxDropLogs:
		c.log(fmt.Sprintf("dropped a response (id %s) on the standalone GET stream, which carries only requests and notifications", bounded(fmt.Sprint(id.Raw()))))
	case n == maxDropLogs+1:
		c.log(fmt.Sprintf("dropped more than %d responses on the standalone GET stream; the rest are not logged", maxDropLogs))
	}
}
