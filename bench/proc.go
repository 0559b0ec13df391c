package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports; reading it needs
// sysconf, which needs cgo.
const clockTicks = 100

// cpuSeconds is the process's user plus system CPU time so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15). The command name
// (field 2) may hold spaces and parentheses, so fields are counted from
// the last ')'.
func parseStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat line")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime is field 14.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line has %d fields after the name", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat utime/stime are not numbers")
	}
	return float64(ut+st) / clockTicks, nil
}

type mem struct{ rssMB, hwmMB float64 }

func readMem(pid int) (mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{}, err
	}
	return parseStatusMem(b)
}

// parseStatusMem reads VmRSS and VmHWM (kB) from /proc/<pid>/status.
func parseStatusMem(status []byte) (mem, error) {
	var m mem
	var seen int
	for _, line := range strings.Split(string(status), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("unexpected %s line %q", name, line)
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return m, err
		}
		if name == "VmRSS" {
			m.rssMB = kb / 1024
		} else {
			m.hwmMB = kb / 1024
		}
		seen++
	}
	if seen != 2 {
		return m, fmt.Errorf("VmRSS or VmHWM missing")
	}
	return m, nil
}

// resetPeak restarts VmHWM at the current RSS so each scenario reports
// its own peak; without it the column would only ever grow.
func resetPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// raiseNoFile lifts the soft open-file limit to the hard one; children
// inherit it, and holding thousands of streams needs two descriptors per
// stream in the proxy.
func raiseNoFile() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}
