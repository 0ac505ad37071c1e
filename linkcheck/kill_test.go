package linkcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const killChildEnv = "ARKHE_LINKCHECK_KILL_CHILD"

// TestKilledRunLosesNoRecordedCheck runs a check in a child process that
// writes to a FileSink and prints each key once Record has returned, kills
// the child with SIGKILL after 20 such acknowledgements, and asserts that
// every acknowledged check is in the file, whole.
func TestKilledRunLosesNoRecordedCheck(t *testing.T) {
	t.Parallel()
	if os.Getenv(killChildEnv) != "" {
		killChild()
		return
	}
	path := filepath.Join(t.TempDir(), "checks.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunLosesNoRecordedCheck$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 20 {
		if k, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			acked[k] = true
		}
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	_ = cmd.Wait()
	if len(acked) < 20 {
		t.Fatalf("the child acknowledged %d checks before it ended", len(acked))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i, line := range lines {
		var rec FileRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("%s line %d is not a whole record: %v", path, i+1, err)
		}
		if rec.Result.Check.Outcome != OutcomeGood || rec.State.LastSuccess.IsZero() {
			t.Errorf("line %d: %+v", i+1, rec)
		}
		inFile[rec.Result.Key] = true
	}
	for k := range acked {
		if !inFile[k] {
			t.Errorf("acknowledged check %s is not in the file", k)
		}
	}
	t.Logf("%d checks acknowledged when killed, %d in the file", len(acked), len(inFile))
}

// killChild is the child's side: 200 targets on one host at a 10 ms
// interval, recorded to the file named by the environment.
func killChild() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f, err := os.OpenFile(os.Getenv(killChildEnv), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fs := NewFileSink(f)
	var mu sync.Mutex
	sink := SinkFunc(func(ctx context.Context, r Result, next State, ts []Transition) error {
		if err := fs.Record(ctx, r, next, ts); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(os.Stdout, "ACK %s\n", r.Key)
		return err
	})
	var targets []Target
	for i := range 200 {
		targets = append(targets, Target{Key: fmt.Sprintf("99999/k%d", i), URL: fmt.Sprintf("%s/%d", srv.URL, i)})
	}
	cfg := testConfig()
	cfg.PerHostInterval = 10 * time.Millisecond
	if _, err := Run(context.Background(), cfg, SliceSource(targets), sink); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}
