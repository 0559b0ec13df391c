package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuPlan is how the yardstick splits the machine the way the field's
// harness does ("gateway pinned to its cores; mock and load generator on
// separate cores"): every proxy under test on the upper half of the CPUs
// this process may use, the load generator, the mocks and the databases
// the controls use on the lower half. Sharing cores, a proxy's p99 is the
// scheduler's: the load generator's and the mock's wake-ups land in its
// tail, and the two p99 goals measured that more than the proxy.
type cpuPlan struct {
	proxy, harness []int
}

// planCPUs splits the CPUs this process may run on; ok is false with
// fewer than two (nothing to split).
func planCPUs() (p cpuPlan, ok bool) {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return p, false
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return p, false
	}
	half := len(cpus) / 2
	return cpuPlan{harness: cpus[:len(cpus)-half], proxy: cpus[len(cpus)-half:]}, true
}

// describe says where everything runs; services names the databases
// moved to the harness CPUs.
func (p cpuPlan) describe(services []string) string {
	others := "load generator and mocks"
	if len(services) > 0 {
		others += ", " + strings.Join(services, ", ")
	}
	return fmt.Sprintf("proxies on CPU %s (GOMAXPROCS %d); %s on CPU %s", cpuList(p.proxy), len(p.proxy), others, cpuList(p.harness))
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

func cpuSet(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// pinTree pins every thread of pid and of its descendants to cpus.
// Threads and processes made later inherit the mask of the one that made
// them, so a pass that found nothing left to pin ends it; a few passes
// catch what was being made during the first.
func pinTree(pid int, cpus []int) error {
	want := cpuSet(cpus)
	for pass := 0; pass < 5; pass++ {
		changed := false
		for _, p := range append([]int{pid}, descendants(pid)...) {
			tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
			if err != nil {
				if p == pid {
					return fmt.Errorf("pinning process %d: %w", pid, err)
				}
				continue // ended meanwhile
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil {
					continue
				}
				var have unix.CPUSet
				if unix.SchedGetaffinity(tid, &have) == nil && have == *want {
					continue
				}
				if err := unix.SchedSetaffinity(tid, want); err == nil {
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	var have unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &have); err != nil || have != *want {
		return fmt.Errorf("process %d could not be pinned to CPU %s (%v)", pid, cpuList(cpus), err)
	}
	return nil
}

// descendants lists pid's children, grandchildren and so on, from each
// process's parent in /proc/<pid>/stat.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		if pp, ok := statParent(b); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// statParent reads field 4 (ppid) of a /proc/<pid>/stat line, counting
// from the last ')' because the command name may hold spaces.
func statParent(stat []byte) (int, bool) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// listenerPID finds the process listening on a loopback TCP port of this
// machine (PostgreSQL's postmaster, redis-server): the socket's inode
// from /proc/net/tcp{,6}, then the process holding it. ok is false when
// the address is not local or the process cannot be seen.
func listenerPID(rawURL string) (pid int, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, false
	}
	host, portStr := u.Hostname(), u.Port()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return 0, false
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return 0, false
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(table, uint16(port)) {
			inodes["socket:["+ino+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return 0, false
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			p, err := strconv.Atoi(strings.Split(fd, "/")[2])
			return p, err == nil
		}
	}
	return 0, false
}

// listeningInodes returns the inodes of the sockets in LISTEN state (0A)
// on port in one /proc/net/tcp table.
func listeningInodes(table string, port uint16) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && uint16(p) == port {
			out = append(out, fields[9])
		}
	}
	return out
}

// pinHarness moves this process (the load generator; the mock it starts
// inherits the mask) and the loopback PostgreSQL and Redis the controls
// use onto the harness CPUs, and makes every process started from here
// on run as many Go threads as the proxies will have CPUs. services names
// the databases it moved; restore gives them every CPU back.
func pinHarness(plan cpuPlan, c config) (restore func(), services []string, err error) {
	all := append(append([]int{}, plan.harness...), plan.proxy...)
	if err := pinTree(os.Getpid(), plan.harness); err != nil {
		return nil, nil, err
	}
	runtime.GOMAXPROCS(len(plan.harness))
	// Children start on the harness CPUs and the proxies move after;
	// GOMAXPROCS fixes their thread count to the CPUs they will have
	// instead of the ones they started on.
	if err := os.Setenv("GOMAXPROCS", strconv.Itoa(len(plan.proxy))); err != nil {
		return nil, nil, err
	}
	var pids []int
	for _, svc := range []struct{ name, url string }{{"PostgreSQL", c.postgres}, {"Redis", c.redis}} {
		if pid, ok := listenerPID(svc.url); ok && pinTree(pid, plan.harness) == nil {
			pids = append(pids, pid)
			services = append(services, svc.name)
		}
	}
	return func() {
		for _, pid := range pids {
			_ = pinTree(pid, all)
		}
	}, services, nil
}

// pinProxies moves every proxy under test, and whatever it started, onto
// the proxy CPUs.
func pinProxies(plan cpuPlan, ts ysTargets) error {
	seen := map[*child]bool{}
	for _, list := range [][]proxyTarget{ts.c1, ts.load, ts.ttft, ts.streams} {
		for _, t := range list {
			if t.proc == nil || seen[t.proc] {
				continue
			}
			seen[t.proc] = true
			if err := pinTree(t.proc.pid(), plan.proxy); err != nil {
				return fmt.Errorf("%s: %w", t.key, err)
			}
		}
	}
	return nil
}
