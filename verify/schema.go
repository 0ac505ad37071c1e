package verify

import (
	"context"
	"crypto/md5"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

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
	// Layout is "" for a trigger of both layouts, else the one layout ("single" or "citus")
	// whose migrations create it: inside "if arkhe_layout() = 'single' then ... end if".
	Layout string
}

// forLayout returns the triggers of want that a ledger of the given layout has.
func forLayout(want []ExpectedTrigger, citus bool) []ExpectedTrigger {
	layout := map[bool]string{false: "single", true: "citus"}[citus]
	out := make([]ExpectedTrigger, 0, len(want))
	for _, w := range want {
		if w.Layout == "" || w.Layout == layout {
			out = append(out, w)
		}
	}
	return out
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
	layoutBlockRE    = regexp.MustCompile(`(?is)\bif\s+arkhe_layout\(\)\s*=\s*'(single|citus)'\s+then\b(.*?)\b(?:else|elsif|end\s+if)\b`)
)

// schemaExpectations returns the triggers the embedded migrations create and do not drop
// again, sorted by table and name, and the body of every function they define (the last
// definition wins, as in the database). It is derived from the migration text so that a
// migration adding a protected table is checked without a change here. The migrations are
// embedded, so the result is derived once per process (every audit asks twice); callers must
// not modify it.
func schemaExpectations() ([]ExpectedTrigger, map[string]string, error) {
	e := embeddedExpectations()
	return e.triggers, e.bodies, e.err
}

// expectations is what schemaExpectations returns.
type expectations struct {
	triggers []ExpectedTrigger
	bodies   map[string]string
	err      error
}

// embeddedExpectations derives the expectations of the embedded migrations on its first call
// and returns that result ever after; it holds no other state.
var embeddedExpectations = sync.OnceValue(func() expectations {
	ms, err := ledger.Migrations()
	if err != nil {
		return expectations{err: err}
	}
	t, b := expectationsFrom(ms)
	return expectations{triggers: t, bodies: b}
})

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
		blocks := layoutBlockRE.FindAllStringSubmatchIndex(m.SQL, -1)
		layoutAt := func(at int) string {
			for _, b := range blocks {
				if at >= b[4] && at < b[5] {
					return lower(m.SQL, b, 1)
				}
			}
			return ""
		}
		for _, g := range literalTriggerRE.FindAllStringSubmatchIndex(m.SQL, -1) {
			steps = append(steps, step{at: g[0], t: ExpectedTrigger{Table: lower(m.SQL, g, 2), Name: lower(m.SQL, g, 1), Function: lower(m.SQL, g, 3),
				Layout: layoutAt(g[0])}})
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
	return slices.Clone(t), err
}

// checkSchema runs schema.triggers on q: every expected trigger exists on its table in the
// current schema, is enabled for ordinary sessions (pg_trigger.tgenabled = 'O'), calls its
// function, whose body equals the migrations'; and ordinary sessions do not default to
// session_replication_role = replica (which silences every such trigger). With citus (a
// Citus coordinator) the same holds on every shard placement of every table on every node
// (checkPlacements).
func checkSchema(ctx context.Context, q pgx.Tx, rec *recorder, citus bool) error {
	want, bodies, err := schemaExpectations()
	if err != nil {
		return err
	}
	want = forLayout(want, citus)
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
	reported := map[string]bool{} // subjects with a finding
	for _, w := range want {
		subject := "trigger " + w.Name + " on " + w.Table
		l, ok := have[w.Name+"\x00"+w.Table]
		switch {
		case !ok:
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is missing: the promise it carries is not enforced", subject))
			reported[subject] = true
			continue
		case l.enabled != "O":
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is not enabled for ordinary sessions (pg_trigger.tgenabled = %q, want \"O\")", subject, l.enabled))
			reported[subject] = true
		case l.function != w.Function:
			rec.add(CheckSchema, subject, "", fmt.Sprintf("%s calls %s(), want %s()", subject, l.function, w.Function))
			reported[subject] = true
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
	if citus {
		return checkPlacements(ctx, q, rec, want, src, reported)
	}
	return nil
}

// checkPlacements is schema.triggers on a Citus coordinator's shard placements: a distributed
// or reference table's rows live in shards on the nodes, and a trigger of the table fires as
// the shard's copy of it (named after the shard, trigger_SHARDID), so a trigger disabled or
// dropped on a shard, or a trigger function replaced on a node, breaks the promise there while
// the coordinator's catalog still shows it whole. Every expected trigger other than a TRUNCATE
// trigger (which fires on the table itself, on the node that got the command) must be on
// every placement, enabled, calling a function whose body is the coordinator's; and the
// workers' sessions must not default to session_replication_role = replica. A trigger already
// reported on the coordinator (reported: by subject) is not reported again for its shards,
// which Citus changes with it.
func checkPlacements(ctx context.Context, q pgx.Tx, rec *recorder, want []ExpectedTrigger, src map[string]string, reported map[string]bool) error {
	truncate := map[string]bool{} // name and table of the expected TRUNCATE triggers
	rows, err := q.Query(ctx, `select t.tgname || '|' || c.relname from pg_trigger t join pg_class c on c.oid = t.tgrelid
		where not t.tgisinternal and t.tgtype & 32 <> 0`) // TRIGGER_TYPE_TRUNCATE
	if err != nil {
		return fmt.Errorf("read triggers: %w", err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return fmt.Errorf("read triggers: %w", err)
		}
		truncate[k] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read triggers: %w", err)
	}
	byTable := map[string][]ExpectedTrigger{}
	for _, w := range want {
		if !truncate[w.Name+"|"+w.Table] {
			byTable[w.Table] = append(byTable[w.Table], w)
		}
	}
	// every placement of every Citus table (reference tables have one on each node)
	type placement struct {
		table string
		shard int64
		node  string
	}
	var ps []placement
	rows, err = q.Query(ctx, `select s.logicalrelid::text, s.shardid, n.nodename || ':' || n.nodeport
		from pg_dist_shard s join pg_dist_placement p using (shardid) join pg_dist_node n on n.groupid = p.groupid
		where n.isactive order by 1, 2, 3`)
	if err != nil {
		return fmt.Errorf("read the shard placements: %w", err)
	}
	for rows.Next() {
		var p placement
		if err := rows.Scan(&p.table, &p.shard, &p.node); err != nil {
			rows.Close()
			return fmt.Errorf("read the shard placements: %w", err)
		}
		ps = append(ps, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the shard placements: %w", err)
	}
	// the triggers on every node, one line each: relation, trigger, tgenabled, function, md5 of
	// its body (a shard's name is its table's and _SHARDID; Citus hides shards from pg_class
	// queries, not from regclass)
	have := map[string]map[string][3]string{} // node -> "relation trigger" -> enabled, function, md5
	rows, err = q.Query(ctx, `select n.nodename || ':' || n.nodeport, r.success, r.result
		from run_command_on_all_nodes($$select coalesce(string_agg(t.tgrelid::regclass::text || ' ' || t.tgname
			|| ' ' || t.tgenabled::text || ' ' || p.proname || ' ' || md5(p.prosrc), chr(10)), '')
			from pg_trigger t join pg_proc p on p.oid = t.tgfoid where not t.tgisinternal$$) r
		join pg_dist_node n using (nodeid)`)
	if err != nil {
		return fmt.Errorf("read the triggers of the nodes: %w", err)
	}
	for rows.Next() {
		var node, result string
		var ok bool
		if err := rows.Scan(&node, &ok, &result); err != nil {
			rows.Close()
			return fmt.Errorf("read the triggers of the nodes: %w", err)
		}
		if !ok {
			rows.Close()
			return fmt.Errorf("read the triggers of node %s: %s", node, result)
		}
		m := map[string][3]string{}
		for _, line := range strings.Split(result, "\n") {
			if f := strings.Fields(line); len(f) == 5 {
				m[f[0]+" "+f[1]] = [3]string{f[2], f[3], f[4]}
			}
		}
		have[node] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the triggers of the nodes: %w", err)
	}
	for _, p := range ps {
		for _, w := range byTable[p.table] {
			subject := "trigger " + w.Name + " on " + w.Table
			if reported[subject] {
				continue
			}
			where := fmt.Sprintf("on shard %d of %s on node %s", p.shard, p.table, p.node)
			h, ok := have[p.node][fmt.Sprintf("%s_%d %s_%d", p.table, p.shard, w.Name, p.shard)]
			switch {
			case !ok:
				rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is missing %s: the promise it carries is not enforced there", subject, where))
			case h[0] != "O":
				rec.add(CheckSchema, subject, "", fmt.Sprintf("%s is not enabled for ordinary sessions %s (pg_trigger.tgenabled = %q, want \"O\")", subject, where, h[0]))
			case h[1] != w.Function:
				rec.add(CheckSchema, subject, "", fmt.Sprintf("%s calls %s() %s, want %s()", subject, h[1], where, w.Function))
			case h[2] != fmt.Sprintf("%x", md5.Sum([]byte(src[w.Function]))):
				rec.add(CheckSchema, subject, "", fmt.Sprintf("%s calls a function %s() %s whose body differs from the coordinator's", subject, w.Function, where))
			}
		}
	}
	rows, err = q.Query(ctx, `select nodename || ':' || nodeport, success, result from run_command_on_workers(
		$$select setting from pg_settings where name = 'session_replication_role'$$) order by 1`)
	if err != nil {
		return fmt.Errorf("read the workers' session_replication_role: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var node, result string
		var ok bool
		if err := rows.Scan(&node, &ok, &result); err != nil {
			return fmt.Errorf("read the workers' session_replication_role: %w", err)
		}
		if ok && result != "origin" {
			rec.add(CheckSchema, "session_replication_role on node "+node, "", fmt.Sprintf("sessions on node %s default to session_replication_role = %s, which silences the ledger's triggers on its shards", node, result))
		}
	}
	return rows.Err()
}
