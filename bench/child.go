package bench

import (
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// childPeakInterval is how often runChild reads the child's peak resident set.
const childPeakInterval = 20 * time.Millisecond

// childRun is what runChild measured of one child: its peak resident set in octets, its wall
// time, and the processor time (user + system) of the child (CPU.Client) and of the servers whose
// data directories runChild was given (CPU.Server) while it ran.
type childRun struct {
	Peak    int64
	Elapsed time.Duration
	CPU     CPU
}

// runChild runs cmd to completion and returns what it measured (childRun); dataDirs are the
// servers the child works on (sampleCPU). The peak is the child's own: VmHWM of /proc/PID/status, which counts the
// memory of the program the child executes from the exec on, read every childPeakInterval while
// it runs (the last read is at most that long before it exits). The child's rusage maximum
// resident set is not used: it also counts the forking process's resident pages, which the
// child shares until its exec (on Linux). Where /proc is missing the peak is 0. The error is
// cmd's (an *exec.ExitError for a non-zero exit).
func runChild(cmd *exec.Cmd, dataDirs ...string) (run childRun, err error) {
	cpu0 := sampleCPU(dataDirs...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run, err
	}
	status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	done := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var hwm int64
		t := time.NewTicker(childPeakInterval)
		defer t.Stop()
		for {
			if v := vmHWM(status); v > hwm {
				hwm = v
			}
			select {
			case <-done:
				sampled <- hwm
				return
			case <-t.C:
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	run.Peak, run.Elapsed = <-sampled, time.Since(start)
	run.CPU.Server = sampleCPU(dataDirs...).Sub(cpu0).Server
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			run.CPU.Client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return run, err
}
