package verify

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// ExpectedTrigger is one trigger that carries a promise of the ledger (nothing is deleted, a retired
// shoulder stays retired, updates go through the repoint path): it must exist on Table, be enabled, and call Function, whose body
// must be the one the migrations define.
type ExpectedTrigger struct {
	Table    string // e.g. "ark"
	Name     string // e.g. "ark_no_delete"
	Function string // e.g. "arkhe_refuse_delete"
}

// Patterns over the embedded migrations (ledger.Migrations). The ledger's triggers are created
// either by a literal CREATE TRIGGER statement or by the loop of 0001_ledger.sql
// ("foreach t in array array[...] loop execute format('create trigger %I ... execute function
// F()', t || '_suffix', t)"); function bodies are dollar-quoted.
var (
	literalTriggerRE = regexp.MustCompile(`(?is)\bcreate\s+trigger\s+(\w+)\s+[^;]*?\bon\s+(\w+)\s+[^;]*?\bexecute\s+(?:function|procedure)\s+(\w+)\s*\(`)
	loopRE           = regexp.MustCompile(`(?is)\bforeach\s+(\w+)\s+in\s+array\s+array\s*\[([^\]]*)\]\s+loop(.*?)\bend\s+loop`)
	loopTriggerRE    = regexp.MustCompile(`(?is)'create\s+trigger\s+%I\s+[^']*?\bexecute\s+(?:function|procedure)\s+(\w+)\s*\(\s*\)'\s*,\s*(\w+)\s*\|\|\s*'(\w+)'`)
	quotedRE         = regexp.MustCompile(`'(\w+)'`)
	functionRE       = regexp.MustCompile(`(?is)\bcreate\s+(?:or\s+replace\s+)?function\s+(\w+)\s*\([^$]*?\$\$(.*?)\$\$`)
	dropTriggerRE    = regexp.MustCompile(`(?is)\bdrop\s+trigger\s+(?:if\s+exists\s+)?(\w+)\s+on\s+(\w+)`)
)

// schemaExpectations returns the triggers the embedded migrations create and do not drop
// again, sorted by table and name, and the body of every function they define (the last
// definition wins, as in the database). It is derived from the migration text so that a
// migration adding a protected table is checked without a change here.
func schemaExpectations() ([]ExpectedTrigger, map[string]string, error) {
	ms, err := ledger.Migrations()
	if err != nil {
		return nil, nil, err
	}
	t, b := expectationsFrom(ms)
	return t, b, nil
}

// expectationsFrom derives the expected triggers and function bodies from migrations ms, in
// order (see schemaExpectations).
func expectationsFrom(ms []ledger.Migration) ([]ExpectedTrigger, map[string]string) {
	byKey := map[string]ExpectedTrigger{} // by name and table, the last migration's definition
	add := func(t ExpectedTrigger) { byKey[t.Name+"\x00"+t.Table] = t }
	bodies := map[string]string{}
	// Statements take effect in text order: a migration may drop a trigger and create it again.
	type step struct {
		at   int
		drop bool
		t    ExpectedTrigger
	}
	for _, m := range ms {
		var steps []step
		for _, g := range literalTriggerRE.FindAllStringSubmatchIndex(m.SQL, -1) {
			steps = append(steps, step{at: g[0], t: ExpectedTrigger{Table: lower(m.SQL, g, 2), Name: lower(m.SQL, g, 1), Function: lower(m.SQL, g, 3)}})
		}
		for _, loop := range loopRE.FindAllStringSubmatchIndex(m.SQL, -1) {
			variable := lower(m.SQL, loop, 1)
			var tables []string
			for _, q := range quotedRE.FindAllStringSubmatch(m.SQL[loop[4]:loop[5]], -1) {
				tables = append(tables, strings.ToLower(q[1]))
			}
			body := m.SQL[loop[6]:loop[7]]
			for _, g := range loopTriggerRE.FindAllStringSubmatch(body, -1) {
				if strings.ToLower(g[2]) != variable {
					continue
				}
				for _, t := range tables {
					steps = append(steps, step{at: loop[0], t: ExpectedTrigger{Table: t, Name: t + strings.ToLower(g[3]), Function: strings.ToLower(g[1])}})
				}
			}
		}
		for _, g := range dropTriggerRE.FindAllStringSubmatchIndex(m.SQL, -1) {
			steps = append(steps, step{at: g[0], drop: true, t: ExpectedTrigger{Name: lower(m.SQL, g, 1), Table: lower(m.SQL, g, 2)}})
		}
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
		for _, st := range steps {
			if st.drop {
				delete(byKey, st.t.Name+"\x00"+st.t.Table)
			} else {
				add(st.t)
			}
		}
		for _, g := range functionRE.FindAllStringSubmatch(m.SQL, -1) {
			bodies[strings.ToLower(g[1])] = g[2]
		}
	}
	out := make([]ExpectedTrigger, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Table != out[j].Table {
			return out[i].Table < out[j].Table
		}
		return out[i].Name < out[j].Name
	})
	return out, bodies
}

// lower returns submatch i of the index match g in s, lowercased.
func lower(s string, g []int, i int) string { return strings.ToLower(s[g[2*i]:g[2*i+1]]) }

// ExpectedTriggers returns the triggers `arkhe verify` requires present and enabled (check
// schema.triggers), as derived from the embedded migrations: the delete- and truncate-refusing
// triggers of every ledger table, the append-only triggers, and ark_update, ark_reach,
// shoulder_update, client_reach, credential_kind and those of later migrations.
func ExpectedTriggers() ([]ExpectedTrigger, error) {
	t, _, err := schemaExpectations()
	return t, err
}

// checkSchema runs schema.triggers on q: every expected trigger exists on its table in the
// current schema, is enabled for ordinary sessions (pg_trigger.tgenabled = 'O'), calls its
// function, whose body equals the migrations'; and ordinary sessions do not default to
// session_replication_role = replica (which silences every such trigger).
func checkSchema(ctx context.Context, q pgx.Tx, rec *recorder) error {
	want, bodies, err := schemaExpectations()
	if err != nil {
		return err
	}
	type live struct {
		table, enabled, function string
	}
	rows, err := q.Query(ctx, `select t.tgname, c.relname, t.tgenabled::text, p.proname
		from pg_trigger t
		join pg_class c on c.oid = t.tgrelid
		join pg_proc p on p.oid = t.tgfoid
		where not t.tgisinternal and c.relnamespace = (select oid from pg_namespace where nspname = current_schema())`)
	if err != nil {
		return fmt.Errorf("read triggers: %w", err)
	}
	have := map[string]live{}
	for rows.Next() {
		var name string
		var l live
		if err := rows.Scan(&name, &l.table, &l.enabled, &l.function); err != nil {
			rows.Close()
			return fmt.Errorf("read triggers: %w", err)
		}
		have[name+"\x00"+l.table] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read triggers: %w", err)
	}
	rows, err = q.Query(ctx, `select p.proname, p.prosrc from pg_proc p
		where p.pronamespace = (select oid from pg_namespace where nspname = current_schema())`)
	if err != nil {
		return fmt.Errorf("read functions: %w", err)
	}
	src := map[string]string{}
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			rows.Close()
			return fmt.Errorf("read functions: %w", err)
		}
		src[name] = body
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read functions: %w", err)
	}
	checkedFn := map[string]bool{}
	for _, w := range want {
		subject := "trigger " + w.Name + " on " + w.Table
		l, ok := have[w.Name+"\x00"+w.Table]
		switch {
		case !ok:
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is missing: the promise it carries is not enforced", subject))
			continue
		case l.enabled != "O":
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is not enabled for ordinary sessions (pg_trigger.tgenabled = %q, want \"O\")", subject, l.enabled))
		case l.function != w.Function:
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s calls %s(), want %s()", subject, l.function, w.Function))
		}
		if checkedFn[w.Function] {
			continue
		}
		checkedFn[w.Function] = true
		body, ok := src[w.Function]
		want, known := bodies[w.Function]
		switch {
		case !ok:
			rec.add(CheckSchema, "function "+w.Function, "", fmt.Sprintf("trigger function %s() is missing", w.Function))
		case known && body != want:
			rec.add(CheckSchema, "function "+w.Function, "", fmt.Sprintf("trigger function %s() differs from the one the ledger's migrations define", w.Function))
		}
	}
	var role string
	if err := q.QueryRow(ctx, `select setting from pg_settings where name = 'session_replication_role'`).Scan(&role); err != nil {
		return fmt.Errorf("read session_replication_role: %w", err)
	}
	if role != "origin" {
		rec.add(CheckSchema, "session_replication_role", "", fmt.Sprintf("sessions of this role and database default to session_replication_role = %s, which silences the ledger's triggers", role))
	}
	return nil
}
