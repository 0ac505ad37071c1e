package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU is processor time spent, by the PostgreSQL server (the postmaster and all its children,
// exited ones included) and by this process. Unlike a rate, it hardly depends on what else the
// machine is running, so it shows the cost of arkhe's extra work even on a busy machine.
type CPU struct {
	Server, Client time.Duration
}

// Total is Server + Client.
func (c CPU) Total() time.Duration { return c.Server + c.Client }

// Sub returns c - d.
func (c CPU) Sub(d CPU) CPU { return CPU{Server: c.Server - d.Server, Client: c.Client - d.Client} }

// clockTick is the unit of /proc/PID/stat times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// sampleCPU reads the CPU time of the servers whose data directories are dataDirs, summed
// (none, "" or no /proc: Server stays 0; a Citus cluster: every node's), and of this process.
func sampleCPU(dataDirs ...string) CPU {
	var c CPU
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.Client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, d := range dataDirs {
		c.Server += serverCPU(d)
	}
	return c
}

// serverCPU returns the CPU time of the server whose data directory is dataDir: its postmaster
// (with its reaped children) and its live children; 0 for "" or without /proc.
func serverCPU(dataDir string) time.Duration {
	var d time.Duration
	if dataDir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return d
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return d
	}
	// the postmaster itself, plus its reaped children (cutime, cstime)
	if f, ok := procStat(pm); ok {
		d += ticks(f, 11, 12, 13, 14)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return d
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pm {
			continue
		}
		f, ok := procStat(pid)
		if !ok || len(f) < 13 || f[1] != strconv.Itoa(pm) {
			continue
		}
		d += ticks(f, 11, 12)
	}
	return d
}

// procStat returns the fields of /proc/PID/stat after the command name: f[0] is the state,
// f[1] the parent PID, f[11] utime, f[12] stime, f[13] cutime, f[14] cstime.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

func ticks(f []string, idx ...int) time.Duration {
	var d time.Duration
	for _, i := range idx {
		if i < len(f) {
			if n, err := strconv.ParseInt(f[i], 10, 64); err == nil {
				d += time.Duration(n) * clockTick
			}
		}
	}
	return d
}
