package report

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// tempChildEnv makes the test binary a writer that creates the report named by it, writes a row,
// says "ready" and waits to be killed.
const tempChildEnv = "ARKHE_REPORT_TEMP_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(tempChildEnv); path != "" {
		w, err := Create[changeRow](path, CSV)
		if err == nil {
			err = w.Write(changeFixture()[0])
		}
		if err == nil {
			err = w.out.Flush()
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString("ready\n")
		select {} // until killed
	}
	os.Exit(m.Run())
}

// startWriter starts a process that holds a report of path open, as a run does mid-way.
func startWriter(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), tempChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("writer process: %q, %v", line, err)
	}
	return cmd
}

// temps lists the temporary files of base in dir.
func temps(t *testing.T, dir, base string) []string {
	t.Helper()
	var got []string
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, "."+base+".tmp") {
			got = append(got, n)
		}
	}
	return got
}

// TestKilledWritersTempIsRemovedByTheNext: a process writing a report is killed (SIGKILL: it
// cannot clean up) and leaves its temporary file; the next Create of the same path removes it,
// while the temporary file of a writer that is still running, and those of other outputs, stay.
func TestKilledWritersTempIsRemovedByTheNext(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock")
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "map.csv")
	alive := startWriter(t, path) // a concurrent run of the same output, still writing
	kept := temps(t, dir, "map.csv")
	killed := startWriter(t, path)
	before := temps(t, dir, "map.csv")
	if len(kept) != 1 || len(before) != 2 || !slices.Contains(before, kept[0]) {
		t.Fatalf("temporary files of the live writer %q, of both %q: a writer removed the other's", kept, before)
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	other := filepath.Join(dir, ".other.csv.tmp-123")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	left := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == kept[0] })

	w, err := Create[changeRow](path, JSONL)
	if err != nil {
		t.Fatal(err)
	}
	during := temps(t, dir, "map.csv")
	if slices.Contains(during, left[0]) || !slices.Contains(during, kept[0]) || len(during) != 2 {
		t.Fatalf("after the next Create: %q; the killed writer's %s must be gone, the live writer's and the new one kept", during, left[0])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another output's temporary file was removed: %v", err)
	}
	_ = alive.Process.Kill()
	_ = alive.Wait()
	// the live writer is gone too: a writer that has nothing to write sweeps it
	if err := RemoveStaleTemps(path); err != nil {
		t.Fatal(err)
	}
	if got := temps(t, dir, "map.csv"); len(got) != 0 {
		t.Errorf("temporary files left: %q", got)
	}
}

// TestOpenTemp: a fixed temporary name (a reject file's PATH.tmp) left by a killed run is taken
// over and emptied; one a live writer holds is refused; RemoveStaleTemp removes only a stale one.
func TestOpenTemp(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock")
	}
	t.Parallel()
	tmp := filepath.Join(t.TempDir(), "rejects.csv.tmp")
	if err := os.WriteFile(tmp, []byte("left by a killed run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenTemp(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("a killed run's file was not emptied: %d octets", st.Size())
	}
	if _, err := OpenTemp(tmp); !errors.Is(err, ErrTempBusy) {
		t.Errorf("a second writer while the first holds it: %v, want ErrTempBusy", err)
	}
	RemoveStaleTemp(tmp)
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("a live writer's file was removed: %v", err)
	}
	_ = f.Close()
	RemoveStaleTemp(tmp)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale file was left: %v", err)
	}
}
