package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeFiles writes files (path relative to dir → content) with mode.
func writeFiles(t *testing.T, dir string, mode os.FileMode, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRun runs stand-in test binaries (shell scripts) of a small module: a passing package is
// one ok line with its output but PASS, a failing one its whole output and FAIL, in package
// order whatever order they finish in, each run in its package's directory with the flags given;
// a package without tests is left out; a missing binary stops the run before anything runs.
func TestRun(t *testing.T) {
	mod := t.TempDir()
	writeFiles(t, mod, 0o644, map[string]string{
		"go.mod":           "module example.org/m\n\ngo 1.24\n",
		"a/a.go":           "package a\n",
		"a/a_test.go":      "package a\n",
		"b/b.go":           "package b\n",
		"b/b_test.go":      "package b_test\n",
		"notest/notest.go": "package notest\n",
	})
	bin := t.TempDir()
	writeFiles(t, bin, 0o755, map[string]string{
		// a finishes after b: the output keeps package order
		"a.test": "#!/bin/sh\nsleep 0.3\necho \"in $(basename \"$PWD\") with $*\"\necho PASS\n",
		"b.test": "#!/bin/sh\necho '--- FAIL: TestB'\nexit 1\n",
	})
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"-C", mod, "-p", "2", bin, "-test.short", "-test.count=1"}, &out, &errOut)
	want := regexp.MustCompile(`^in a with -test.short -test.count=1\nok  \texample.org/m/a\t[0-9]+\.[0-9]{3}s\n` +
		`--- FAIL: TestB\nFAIL\texample.org/m/b\t[0-9.]+s\nFAIL\n$`)
	if code != 1 || !want.MatchString(out.String()) || errOut.Len() != 0 {
		t.Errorf("status %d, stdout %q, stderr %q; want 1 and stdout matching %s", code, out.String(), errOut.String(), want)
	}

	if err := os.Remove(filepath.Join(bin, "b.test")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code = run(context.Background(), []string{"-C", mod, bin}, &out, &errOut)
	if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "example.org/m/b: no test binary (run go test -c -o "+bin+"/ ./... first)") {
		t.Errorf("missing binary: status %d, stdout %q, stderr %q; want 2, nothing run, the package named", code, out.String(), errOut.String())
	}
}
