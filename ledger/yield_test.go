package ledger

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestNetYieldRunsARequestWhoseSocketBecameReady holds the writer's
// promise on one processor: a goroutine parked on a socket that became
// readable during a CPU-bound batch runs at the batch's next yield, not
// after the batch.
func TestNetYieldRunsARequestWhoseSocketBecameReady(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))

	var ran atomic.Bool
	parked := make(chan struct{})
	go func() {
		close(parked)
		var b [1]byte
		if _, err := server.Read(b[:]); err == nil {
			ran.Store(true)
		}
	}()
	<-parked
	runtime.Gosched() // let the reader reach its Read and park on the poller

	y := newNetYield()
	if y == nil {
		t.Skip("no pipe on this machine")
	}
	defer y.close()
	if _, err := client.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	// The "batch": work between yields that never blocks, as SQLite's
	// statements do not. With runtime.Gosched for a yield the reader
	// runs only after all fifty steps.
	for step := range 50 {
		spin(200_000)
		y.yield()
		if ran.Load() {
			// A few yields, not one: the poll's first find may be
			// the writer's own pipe, run before the reader.
			if step >= 5 {
				t.Fatalf("the reader ran only after %d yields", step+1)
			}
			return
		}
	}
	t.Fatal("the reader whose socket was ready did not run during the batch")
}

func TestNetYieldAfterCloseGivesWay(t *testing.T) {
	y := newNetYield()
	if y == nil {
		t.Skip("no pipe on this machine")
	}
	y.yield()
	y.close()
	y.close()
	y.yield() // must not block or panic
	var none *netYield
	none.yield()
	none.close()
}

var spinSink uint64

// spin burns n iterations of arithmetic the compiler cannot drop.
func spin(n int) {
	x := spinSink
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	spinSink = x
}
