package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestCPUTimesBusy(t *testing.T) {
	read := func(s string) cpuTimes { return parseCPUTimes(bufio.NewScanner(strings.NewReader(s))) }
	before := read("cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\nintr 1 2\n")
	// CPU 0: 100 jiffies pass, 90 busy; CPU 1: 100 pass, 10 busy (idle 80, iowait 10).
	after := read("cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 50 0 50 60 0 0 0 0 0 0\ncpu1 10 0 10 130 10 0 0 0 0 0\n")
	if got := after.busy(before, []int{0}); got != 0.9 {
		t.Errorf("CPU 0 busy %.2f, want 0.90", got)
	}
	if got := after.busy(before, []int{1}); got != 0.1 {
		t.Errorf("CPU 1 busy %.2f, want 0.10", got)
	}
	if got := after.busy(before, []int{0, 1}); got != 0.5 {
		t.Errorf("both busy %.2f, want 0.50", got)
	}
	if got := after.busy(before, []int{7}); got != 0 {
		t.Errorf("a CPU not read is busy %.2f", got)
	}
}
