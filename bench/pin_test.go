package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/modelgate/modelgate/internal/testwait"
)

func TestStatParent(t *testing.T) {
	// A command name may hold spaces and parentheses.
	pp, ok := statParent([]byte("4242 (a) b (c)) S 17 4242 4242 0 -1"))
	if !ok || pp != 17 {
		t.Fatalf("statParent = %d, %v; want 17, true", pp, ok)
	}
	if _, ok := statParent([]byte("garbage")); ok {
		t.Fatal("a line without ')' has a parent")
	}
}

func TestListenerPIDFindsThisProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	pid, ok := listenerPID(fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	if !ok || pid != os.Getpid() {
		t.Fatalf("listenerPID = %d, %v; want this process %d", pid, ok, os.Getpid())
	}
	if _, ok := listenerPID(fmt.Sprintf("postgres://db.example.com:%d/x", port)); ok {
		t.Fatal("a remote address was pinned")
	}
}

func TestPinTreeMovesAChildAndItsChildren(t *testing.T) {
	plan, ok := planCPUs()
	if !ok {
		t.Skip("fewer than two CPUs: nothing to split")
	}
	if len(plan.proxy) == 0 || len(plan.harness) == 0 || plan.proxy[0] <= plan.harness[len(plan.harness)-1] {
		t.Fatalf("plan %+v: want the proxies on the upper CPUs, the harness on the lower", plan)
	}
	// sh starts sleep as its child: both must move.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var kids []int
	if !testwait.Until(func() bool { kids = descendants(cmd.Process.Pid); return len(kids) > 0 }) {
		t.Fatal("sh's child never appeared under descendants")
	}
	if err := pinTree(cmd.Process.Pid, plan.proxy); err != nil {
		t.Fatal(err)
	}
	want := cpuSet(plan.proxy)
	for _, pid := range append([]int{cmd.Process.Pid}, kids...) {
		var have unix.CPUSet
		if err := unix.SchedGetaffinity(pid, &have); err != nil {
			t.Fatal(err)
		}
		if have != *want {
			t.Errorf("process %d runs on %v, want CPUs %v", pid, have, plan.proxy)
		}
	}
}
