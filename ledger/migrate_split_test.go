package ledger

import (
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	sql := "-- header; with a semicolon\n" +
		"create table a (x text default 'a;b''c');\n" +
		"/* block; /* nested; */ still; */ select 1;\n" +
		"create function f() returns text language plpgsql as $$ begin return ';'; end $$;\n" +
		"create function g() returns text language sql as $body$ select $$;$$ $body$;\n" +
		"select E'\\';', \"odd;name\"\"\" from a$b;\n" +
		"select $1::text;\n" +
		"  -- only a comment; at the end\n"
	got := splitStatements(sql)
	want := []statement{
		{"-- header; with a semicolon\ncreate table a (x text default 'a;b''c')", 2},
		{"/* block; /* nested; */ still; */ select 1", 3},
		{"create function f() returns text language plpgsql as $$ begin return ';'; end $$", 4},
		{"create function g() returns text language sql as $body$ select $$;$$ $body$", 5},
		{"select E'\\';', \"odd;name\"\"\" from a$b", 6},
		{"select $1::text", 7},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statements, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d = %q (line %d), want %q (line %d)", i, got[i].SQL, got[i].Line, want[i].SQL, want[i].Line)
		}
	}
}

// TestSplitTheBaseline: the baseline migration cuts into statements, each starting on the line
// it names (code, not a comment), and nothing is lost: rejoined, they hold every line that is
// not a comment.
func TestSplitTheBaseline(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		sts := splitStatements(m.SQL)
		// every migration holds statements; the baseline alone holds more than 50
		if len(sts) == 0 || m.Version == 1 && len(sts) < 50 {
			t.Errorf("%s: %d statements", m.Name, len(sts))
		}
		lines := strings.Split(m.SQL, "\n")
		for _, st := range sts {
			first := strings.TrimSuffix(strings.TrimSpace(lines[st.Line-1]), ";")
			if !strings.Contains(st.SQL, first) {
				t.Errorf("%s: statement at line %d (%q) does not start there", m.Name, st.Line, first)
			}
			if strings.HasPrefix(first, "--") {
				t.Errorf("%s: statement at line %d starts with a comment line", m.Name, st.Line)
			}
		}
		var joined strings.Builder
		for _, st := range sts {
			joined.WriteString(st.SQL + ";\n")
		}
		for i, l := range lines {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") && !strings.Contains(joined.String(), l) {
				t.Errorf("%s line %d lost: %q", m.Name, i+1, l)
			}
		}
	}
}
