package report

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// duckResult is what testdata/duckread.mjs prints.
type duckResult struct {
	DuckDB   string `json:"duckdb"`
	Count    int64  `json:"count"`
	Describe []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"describe"`
	Rows []map[string]any `json:"rows"`
}

// types maps column name to DuckDB type from DESCRIBE.
func (r duckResult) types() map[string]string {
	m := map[string]string{}
	for _, d := range r.Describe {
		m[d.Name] = d.Type
	}
	return m
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// duckRead reads file with DuckDB through testdata/duckread.mjs and runs sql
// (against the view t over the file). @duckdb/node-api is looked up in
// $ARKHE_TOOLS/node_modules (`make test` sets ARKHE_TOOLS), else in
// <module root>/.tools/node_modules. It fails the test — never skips — when
// node or the module is missing: CI must run these checks.
func duckRead(t testing.TB, file, sql string) duckResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("DuckDB reader: node (Node.js 20+) is not on PATH: %v; run `make test`, which installs node and @duckdb/node-api (make target duckdb)", err)
	}
	tools := os.Getenv("ARKHE_TOOLS") // set by `make test`
	if tools == "" {
		tools = filepath.Join(moduleRoot(t), ".tools")
	}
	mods := filepath.Join(tools, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "@duckdb", "node-api", "package.json")); err != nil {
		t.Fatalf("DuckDB reader: @duckdb/node-api is not installed in %s (%v); run `make test`, which installs it (make target duckdb: npm install --prefix .tools @duckdb/node-api@VERSION)", mods, err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "duckread.mjs"), file, sql)
	cmd.Env = append(os.Environ(), "ARKHE_NODE_MODULES="+mods)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("DuckDB reader on %s: %v\n%s", file, err, stderr.String())
	}
	var r duckResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("DuckDB reader output %q: %v", out, err)
	}
	return r
}
