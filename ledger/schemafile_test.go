package ledger_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/localpg"
)

// updateSchemaFile rewrites schema.sql from a migrated database instead of comparing it:
// go test ./ledger -run TestSchemaFile -update
var updateSchemaFile = flag.Bool("update", false, "rewrite schema.sql from a migrated database (TestSchemaFile)")

// schemaFileHeader opens schema.sql; the dump follows it.
const schemaFileHeader = `-- The ledger's schema as the migrations in migrations/ leave it on a single node: every
-- table, index, constraint, function and trigger in its current definition, in one file.
-- GENERATED: do not edit. The migrations are the source (forward-only and checksummed);
-- this file is pg_dump --schema-only --no-owner --no-privileges of a freshly migrated
-- database, without the lines that vary from run to run (server and pg_dump versions,
-- SET lines, \restrict keys). go test ./ledger fails when it is stale; regenerate it with
--   go test ./ledger -run TestSchemaFile -update
-- On Citus the same migrations distribute ark and ark_change by the ARK, keep receipts in
-- the receipt table and make the registration tables reference tables.
`

// schemaFileServer is the header's last line: pg_dump's layout differs between PostgreSQL
// major versions, so a run on another major fails on this line first, naming both.
const schemaFileServer = "-- Dumped by the pg_dump of PostgreSQL %d.\n"

// TestSchemaFile fails when schema.sql is not the schema a migrated database holds, so that a
// migration changing a table, function or trigger cannot leave the file behind; -update
// rewrites it.
func TestSchemaFile(t *testing.T) {
	want, err := dumpSchema(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	fixtures.Golden(t, "schema.sql", want, *updateSchemaFile, "go test ./ledger -run TestSchemaFile -update")
}

// TestSchemaFileNormalizes checks the normalization on its own: the lines that vary between
// runs and servers go, the definitions stay, and runs of blank lines become one.
func TestSchemaFileNormalizes(t *testing.T) {
	in := "--\n-- PostgreSQL database dump\n--\n\n\\restrict Abc123\n\n-- Dumped from database version 15.20\n" +
		"-- Dumped by pg_dump version 15.20\n\nSET statement_timeout = 0;\n" +
		"SELECT pg_catalog.set_config('search_path', '', false);\n\n\n\n" +
		"CREATE FUNCTION public.f() RETURNS integer\n    LANGUAGE sql\n    AS $$ SELECT 1 $$;\n\n\n" +
		"--\n-- PostgreSQL database dump complete\n--\n\n\\unrestrict Abc123\n\n"
	got := string(normalizeDump([]byte(in), 15))
	want := schemaFileHeader + "-- Dumped by the pg_dump of PostgreSQL 15.\n\nCREATE FUNCTION public.f() RETURNS integer\n    LANGUAGE sql\n    AS $$ SELECT 1 $$;\n"
	if got != want {
		t.Fatalf("normalized dump:\n%s\nwant:\n%s", got, want)
	}
}

// dumpSchema runs the installed server's pg_dump against the database at url and returns the
// normalized schema.
func dumpSchema(ctx context.Context, url string) ([]byte, error) {
	bindir, major, err := localpg.ServerBinaries(ctx)
	if err != nil {
		return nil, err
	}
	cmd := osexec.CommandContext(ctx, filepath.Join(bindir, "pg_dump"),
		"--schema-only", "--no-owner", "--no-privileges", "--no-tablespaces", "--dbname", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pg_dump: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return normalizeDump(out, major), nil
}

var (
	dumpVarying = regexp.MustCompile(`(?m)^(-- Dumped (from|by) .*|SET .*|SELECT pg_catalog\.set_config\(.*|\\(un)?restrict .*|-- PostgreSQL database dump( complete)?)\n`)
	// a comment line of dashes left alone by the removals above
	dumpBareComment = regexp.MustCompile(`(?m)^--\n(--\n)+`)
	dumpBlankRuns   = regexp.MustCompile(`\n{3,}`)
)

// normalizeDump drops what varies between runs and servers from a pg_dump of the schema and
// puts schemaFileHeader and the server's major version before it: one blank line between statements, one newline at the end.
func normalizeDump(dump []byte, major int) []byte {
	s := dumpVarying.ReplaceAllString(string(dump), "")
	s = dumpBareComment.ReplaceAllString(s, "")
	s = dumpBlankRuns.ReplaceAllString(s, "\n\n")
	s = strings.Trim(s, "\n")
	return []byte(schemaFileHeader + fmt.Sprintf(schemaFileServer, major) + "\n" + s + "\n")
}
