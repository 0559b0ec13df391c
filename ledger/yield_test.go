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
// after the batch. With runtime.Gosched for a yield it runs only when
// sysmon polls, after 10 ms, or by luck when a thread is already waiting
// in the poll (two trials in ten here). A loaded machine can stop the
// threads involved for milliseconds, so five trials of seven must show
// it: runtime.Gosched passes that one time in two hundred.
func TestNetYieldRunsARequestWhoseSocketBecameReady(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	y := newNetYield()
	if y == nil {
		t.Skip("no pipe on this machine")
	}
	defer y.close()
	var steps []int
	prompt := 0
	for range 7 {
		step := yieldsUntilReaderRuns(t, y.yield)
		if step <= 2 {
			prompt++
		}
		steps = append(steps, step)
	}
	if prompt < 5 {
		t.Fatalf("the reader whose socket was ready ran after %v yields: want 1 or 2 in five trials of seven", steps)
	}
}

// yieldsUntilReaderRuns makes a socket readable under a parked reader,
// then runs a batch of work between calls of yield, and says at which
// call the reader had run (51: not during the batch).
func yieldsUntilReaderRuns(t *testing.T, yield func()) int {
	t.Helper()
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
	read := make(chan struct{})
	go func() {
		defer close(read)
		close(parked)
		var b [1]byte
		if _, err := server.Read(b[:]); err == nil {
			ran.Store(true)
		}
	}()
	<-parked
	runtime.Gosched() // let the reader reach its Read and park on the poller
	if _, err := client.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	defer func() { <-read }()
	// The batch: work between yields that never blocks, as SQLite's
	// statements do not.
	for step := 1; step <= 50; step++ {
		spin(200_000)
		yield()
		if ran.Load() {
			return step
		}
	}
	return 51
}

func TestNetYieldAfterCloseGivesWay(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
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
