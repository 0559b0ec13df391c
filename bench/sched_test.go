package main

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// spinFor keeps its processor for d without a call that yields.
//
//go:noinline
func spinFor(d time.Duration) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
	}
	return n
}

// With one processor, a goroutine woken by a timer while another spins
// waits for the spinner: the report must name the spinner as what held
// the processor.
func TestSchedReportNamesWhatHeldTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skip("tracing is on already:", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			time.Sleep(time.Millisecond)
		}
	}()
	spun := make(chan int)
	go func() { spun <- spinFor(30 * time.Millisecond) }()
	<-spun
	<-done
	trace.Stop()
	var out bytes.Buffer
	if err := schedReport(&buf, &out); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	held, _, _ := strings.Cut(report, "| ran in all")
	if !strings.Contains(held, "TestSchedReportNamesWhatHeldTheProcessor.func") || !strings.Contains(report, "over 150µs") {
		t.Fatalf("the spinner is not named as holding the processor:\n%s", report)
	}
}
