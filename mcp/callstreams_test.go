package mcp

import (
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A hostile server's event ids cannot make one connection's memory grow
// past maxStreamIDs ids of at most maxStreamIDLen bytes each.
func TestCallStreamsBounded(t *testing.T) {
	c := newCallStreams(nil)
	call, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", maxStreamIDLen+1)
	c.add(long, call)
	if _, ok := c.resumes(long); ok {
		t.Fatalf("an event id of %d bytes was remembered", len(long))
	}
	short := strings.Repeat("y", maxStreamIDLen)
	c.add(short, call)
	if got, ok := c.resumes(short); !ok || got != call {
		t.Fatalf("resumes(%d-byte id) = %v, %v; want call 7", len(short), got, ok)
	}
	for i := range 2 * maxStreamIDs {
		c.add(strings.Repeat("z", i%maxStreamIDLen)+string(rune('a'+i%26))+strconv.Itoa(i), call)
	}
	if len(c.owner) > maxStreamIDs || len(c.order) > maxStreamIDs {
		t.Fatalf("remembered %d ids (%d in order), bound %d", len(c.owner), len(c.order), maxStreamIDs)
	}
	if _, ok := c.resumes(short); ok {
		t.Fatal("the oldest id was not forgotten")
	}
}
