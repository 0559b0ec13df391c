package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// cpuTimes is /proc/stat's jiffies of each CPU: busy, and in all.
type cpuTimes map[int][2]uint64

// readCPUTimes reads the per-CPU lines of /proc/stat (nil elsewhere).
func readCPUTimes() cpuTimes {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseCPUTimes(bufio.NewScanner(f))
}

func parseCPUTimes(sc *bufio.Scanner) cpuTimes {
	out := cpuTimes{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var total, idle uint64
		for i, v := range f[1:] {
			x, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				break
			}
			total += x
			if i == 3 || i == 4 { // idle, iowait
				idle += x
			}
		}
		out[n] = [2]uint64{total - idle, total}
	}
	return out
}

// busy is the share of the time since before that cpus were busy,
// together (0 when nothing was read).
func (now cpuTimes) busy(before cpuTimes, cpus []int) float64 {
	var busy, total uint64
	for _, c := range cpus {
		a, b := before[c], now[c]
		if b[1] > a[1] {
			busy += b[0] - a[0]
			total += b[1] - a[1]
		}
	}
	if total == 0 {
		return 0
	}
	return float64(busy) / float64(total)
}
