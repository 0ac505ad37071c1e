// Command testrun runs the test binaries that `go test -c -o DIR/ ./...` keeps in DIR, as go
// test runs them: each in its package's directory, -p of them at a time, a passing package as
// one "ok" line, a failing one with its whole output and a "FAIL" line, in package order, and
// exits 1 when one failed. It is `make test-short`'s runner: go test links every package's test
// binary again on every run, while `go test -c -o DIR/` leaves a binary whose code did not
// change alone.
//
// Usage, from the module's root:
//
//	go run ./internal/testrun [-p N] [-C module root] DIR [test binary flags, e.g. -test.short]
//
// A package's binary is DIR/<last element of its import path>.test, the name `go test -c -o
// DIR/` gives it; a package without tests has none and is left out.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// pkg is one package's test binary and where it runs.
type pkg struct {
	importPath, dir, binary string
}

// result is how one binary's run ended.
type result struct {
	out     []byte
	elapsed time.Duration
	err     error
}

// run parses args, runs the binaries and prints their results on stdout; it returns the exit
// status: 0 when every binary passed, 1 when one failed, 2 for a usage or listing error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	parallel := fs.Int("p", runtime.GOMAXPROCS(0), "test binaries run at once (go test's -p)")
	root := fs.String("C", ".", "the module's root, whose packages ./... lists")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 || *parallel < 1 {
		fmt.Fprintln(stderr, "usage: testrun [-p N] [-C module root] DIR [test binary flags]")
		return 2
	}
	dir, flags := fs.Arg(0), fs.Args()[1:]
	pkgs, err := listPackages(ctx, *root, dir)
	if err != nil {
		fmt.Fprintf(stderr, "testrun: %v\n", err)
		return 2
	}
	done := make([]chan result, len(pkgs))
	slots := make(chan struct{}, *parallel)
	for i, p := range pkgs {
		done[i] = make(chan result, 1)
		go func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			done[i] <- runBinary(ctx, p, flags)
		}()
	}
	status := 0
	for i, p := range pkgs {
		r := <-done[i]
		secs := r.elapsed.Seconds()
		if r.err != nil {
			stdout.Write(r.out)
			fmt.Fprintf(stdout, "FAIL\t%s\t%.3fs\n", p.importPath, secs)
			switch {
			case errors.Is(r.err, exec.ErrWaitDelay):
				fmt.Fprintf(stdout, "testrun: %s: test I/O incomplete %v after exiting (a process it started still holds its output)\n", p.binary, waitDelay)
			case !errors.As(r.err, new(*exec.ExitError)):
				fmt.Fprintf(stdout, "testrun: %s: %v\n", p.binary, r.err)
			}
			status = 1
			continue
		}
		stdout.Write(bytes.TrimSuffix(r.out, []byte("PASS\n")))
		fmt.Fprintf(stdout, "ok  \t%s\t%.3fs\n", p.importPath, secs)
	}
	if status != 0 {
		fmt.Fprintln(stdout, "FAIL")
	}
	return status
}

// listPackages returns the packages with tests of the module in root, in go list's order, with
// their binaries in dir (relative to the working directory); a binary that is missing is an
// error (`go test -c -o dir/ ./...` first).
func listPackages(ctx context.Context, root, dir string) ([]pkg, error) {
	list := exec.CommandContext(ctx, "go", "list", "-f",
		"{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}\t{{.Dir}}{{end}}", "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var pkgs []pkg
	for line := range strings.Lines(string(out)) {
		importPath, pkgDir, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		binary := filepath.Join(abs, path.Base(importPath)+".test")
		if _, err := os.Stat(binary); err != nil {
			return nil, fmt.Errorf("%s: no test binary (run go test -c -o %s/ ./... first): %w", importPath, dir, err)
		}
		pkgs = append(pkgs, pkg{importPath: importPath, dir: pkgDir, binary: binary})
	}
	return pkgs, nil
}

// waitDelay is how long runBinary waits for a binary's output once the binary has exited.
const waitDelay = 10 * time.Second

// runBinary runs p's binary with flags in p's directory, its stdout and stderr together.
func runBinary(ctx context.Context, p pkg, flags []string) result {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, p.binary, flags...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = &out, &out
	// a process the binary started and left holding its output (a server it did not stop) must
	// not hold the run: as go test, give up on the output a while after the binary exits
	cmd.WaitDelay = waitDelay
	start := time.Now()
	err := cmd.Run()
	return result{out: out.Bytes(), elapsed: time.Since(start), err: err}
}
