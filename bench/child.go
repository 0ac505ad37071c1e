package bench

import (
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// childPeakInterval is how often runChild reads the child's peak resident set.
const childPeakInterval = 20 * time.Millisecond

// runChild runs cmd to completion and returns its peak resident set in bytes and its processor
// time (user + system). The peak is the child's own: VmHWM of /proc/PID/status, which counts the
// memory of the program the child executes from the exec on, read every childPeakInterval while
// it runs (the last read is at most that long before it exits). The child's rusage maximum
// resident set is not used: it also counts the forking process's resident pages, which the
// child shares until its exec (on Linux). Where /proc is missing the peak is 0. The error is
// cmd's (an *exec.ExitError for a non-zero exit).
func runChild(cmd *exec.Cmd) (peak int64, cpu time.Duration, err error) {
	if err := cmd.Start(); err != nil {
		return 0, 0, err
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
	peak = <-sampled
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return peak, cpu, err
}
