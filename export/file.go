package export

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/arkhe-ledger/arkhe/report"
)

// atomicFile is one output written under a temporary name beside its path (report.CreateTemp)
// and renamed into place by commit.
type atomicFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	err  error // the first write error
}

func createAtomic(path string) (*atomicFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("export: create %s: is a directory", path)
	}
	f, err := report.CreateTemp(path)
	if err != nil {
		return nil, fmt.Errorf("export: create %s: %w", path, err)
	}
	return &atomicFile{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (a *atomicFile) WriteString(s string) {
	if a.err == nil {
		_, a.err = a.w.WriteString(s)
	}
}

func (a *atomicFile) Write(b []byte) {
	if a.err == nil {
		_, a.err = a.w.Write(b)
	}
}

// commit flushes, syncs and renames the file into place (mode 0644).
func (a *atomicFile) commit() error {
	err := a.err
	if err == nil {
		err = a.w.Flush()
	}
	if err == nil {
		err = a.f.Chmod(0o644)
	}
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		_ = os.Remove(a.f.Name())
		return fmt.Errorf("export: write %s: %w", a.path, err)
	}
	return nil
}

func (a *atomicFile) abort() {
	_ = a.f.Close()
	_ = os.Remove(a.f.Name())
}

// sibling is path's name without its extension plus suffix, in path's directory.
func sibling(path, suffix string) string {
	dir, base := filepath.Split(path)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return filepath.Join(dir, base+suffix)
}
