package verify

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The tamper signals: what a clean full audit records of the ledger's tables besides their
// rows, so `arkhe verify --since` can tell, without reading every ARK, whether anything changed
// behind the ledger's paths since (check ledger.signals). Per node (the server; on Citus the
// coordinator and every worker, each shard placement on its own):
//
//   - the file node of every protected table (pg_relation_filenode): TRUNCATE, VACUUM FULL,
//     CLUSTER and a rewriting ALTER TABLE give a table a new one;
//   - the statistics collector's counters of rows inserted, updated, deleted and HOT-updated
//     (pg_stat_all_tables), and when the database's statistics were last reset: a table that
//     refuses DELETE must not count a deleted row, an append-only table an updated one; ark may
//     count no more updates than ARK_CHANGE counts inserted rows (the repoint path writes one
//     per update, in the same transaction on the same node); on the single layout ark may count
//     no more inserted rows than --since finds numbered above the last audit's mark; a counter
//     that went back was reset or lost (a crash loses them);
//   - an md5 of the protected tables' columns, constraints and indexes and of the migrations
//     applied.
//
// The triggers themselves are schema.triggers, which every audit checks whole.

// nodeSignals is one node's part of the signals.
type nodeSignals struct {
	// StatsReset is pg_stat_database.stats_reset of the ledger's database ("" when never reset).
	StatsReset string `json:"stats_reset"`
	// Tables maps a relation (a table; on Citus also table_SHARDID) to its file node and the
	// counters inserted, updated, deleted, HOT-updated.
	Tables map[string][5]int64 `json:"tables"`
}

// signals is what audit_summary.signals holds.
type signals struct {
	Nodes  map[string]nodeSignals `json:"nodes"`
	Schema string                 `json:"schema"`
}

// signalTables returns the protected tables (those with an expected trigger), and which of them
// refuse DELETE and UPDATE.
func signalTables() (tables []string, noDelete, appendOnly map[string]bool, err error) {
	want, err := ExpectedTriggers()
	if err != nil {
		return nil, nil, nil, err
	}
	seen := map[string]bool{}
	noDelete, appendOnly = map[string]bool{}, map[string]bool{}
	for _, w := range want {
		if !seen[w.Table] {
			seen[w.Table] = true
			tables = append(tables, w.Table)
		}
		if w.Function == "arkhe_refuse_delete" && strings.HasSuffix(w.Name, "_no_delete") {
			noDelete[w.Table] = true
		}
		if w.Function == "arkhe_refuse_update" {
			appendOnly[w.Table] = true
		}
	}
	sort.Strings(tables)
	return tables, noDelete, appendOnly, nil
}

// localNode names the single layout's one node.
const localNode = "local"

// signalColumns is the per-node query of the signals over the relations of names (schema
// qualified, as text): a first line with stats_reset, then one line per relation. Functions of
// the relation's oid only: Citus hides shards from queries of pg_class on a worker.
func signalQuery(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + strings.ReplaceAll(n, "'", "''") + "'"
	}
	return fmt.Sprintf(`select coalesce((select stats_reset::text from pg_stat_database where datname = current_database()), '')
		|| chr(10) || coalesce(string_agg(n || ' ' || pg_relation_filenode(r) || ' ' || pg_stat_get_tuples_inserted(r)
			|| ' ' || pg_stat_get_tuples_updated(r) || ' ' || pg_stat_get_tuples_deleted(r)
			|| ' ' || pg_stat_get_tuples_hot_updated(r), chr(10)), '')
		from (select n, to_regclass(n) r from unnest(array[%s]::text[]) n) x where r is not null`, strings.Join(quoted, ", "))
}

// parseNodeSignals parses the result of signalQuery, naming relations without their schema.
func parseNodeSignals(s string) (nodeSignals, error) {
	first, rest, _ := strings.Cut(s, "\n")
	ns := nodeSignals{StatsReset: first, Tables: map[string][5]int64{}}
	for _, line := range strings.Split(rest, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 6 {
			return ns, fmt.Errorf("statistics line %q: want a relation and 5 numbers", line)
		}
		var v [5]int64
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return ns, fmt.Errorf("statistics line %q: %w", line, err)
			}
			v[i] = n
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		ns.Tables[strings.Trim(name, `"`)] = v
	}
	return ns, nil
}

// readSignals reads the signals, on the lead lane right after the audit's snapshot: on the
// single layout from the server, on Citus from every node (every placement of every protected
// table, and the coordinator's own tables).
func (a *audit) readSignals(ctx context.Context, ln *lane) (*signals, error) {
	citus := a.citus
	tables, noDelete, appendOnly, err := signalTables()
	if err != nil {
		return nil, err
	}
	a.noDelete, a.appendOnly = noDelete, appendOnly
	var schema string
	if err := ln.tx.QueryRow(ctx, `select quote_ident(current_schema())`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("verify: read the tamper signals: %w", err)
	}
	names := make([]string, 0, len(tables))
	for _, t := range tables {
		names = append(names, schema+"."+t)
	}
	sig := &signals{Nodes: map[string]nodeSignals{}}
	if err := ln.tx.QueryRow(ctx, schemaDigestSQL, tables).Scan(&sig.Schema); err != nil {
		return nil, fmt.Errorf("verify: read the schema's checksum: %w", err)
	}
	if !citus {
		var s string
		if err := ln.tx.QueryRow(ctx, signalQuery(names)).Scan(&s); err != nil {
			return nil, fmt.Errorf("verify: read the tamper signals: %w", err)
		}
		ns, err := parseNodeSignals(s)
		if err != nil {
			return nil, fmt.Errorf("verify: read the tamper signals: %w", err)
		}
		sig.Nodes[localNode] = ns
		return sig, nil
	}
	rows, err := ln.tx.Query(ctx, `select s.logicalrelid::regclass::text || '_' || s.shardid from pg_dist_shard s
		where s.logicalrelid::regclass::text = any ($1) order by 1`, tables)
	if err != nil {
		return nil, fmt.Errorf("verify: read the shards: %w", err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("verify: read the shards: %w", err)
		}
		names = append(names, schema+"."+n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read the shards: %w", err)
	}
	rows, err = ln.tx.Query(ctx, `select n.nodename || ':' || n.nodeport, r.success, r.result
		from run_command_on_all_nodes($1) r join pg_dist_node n using (nodeid)`, signalQuery(names))
	if err != nil {
		return nil, fmt.Errorf("verify: read the tamper signals of the nodes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var node, result string
		var ok bool
		if err := rows.Scan(&node, &ok, &result); err != nil {
			return nil, fmt.Errorf("verify: read the tamper signals of the nodes: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("verify: read the tamper signals of node %s: %s", node, result)
		}
		ns, err := parseNodeSignals(result)
		if err != nil {
			return nil, fmt.Errorf("verify: read the tamper signals of node %s: %w", node, err)
		}
		sig.Nodes[node] = ns
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read the tamper signals of the nodes: %w", err)
	}
	return sig, nil
}

// schemaDigestSQL is the md5 of the protected tables' ($1) columns, constraints and indexes and
// of the migrations applied.
const schemaDigestSQL = `select md5(coalesce(string_agg(x, chr(10) order by x), '')) from (
	select c.relname || ' column ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull as x
	from pg_attribute a join pg_class c on c.oid = a.attrelid
	where c.relnamespace = current_schema()::regnamespace and c.relname = any ($1) and a.attnum > 0 and not a.attisdropped
	union all
	select conrelid::regclass::text || ' constraint ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint
	where connamespace = current_schema()::regnamespace and conrelid <> 0 and (select relname from pg_class where oid = conrelid) = any ($1)
	union all
	select indrelid::regclass::text || ' index ' || pg_get_indexdef(indexrelid) from pg_index
	where (select relname from pg_class where oid = indrelid and relnamespace = current_schema()::regnamespace) = any ($1)
	union all
	select 'migration ' || version || ' ' || checksum from schema_migration) s`

// compareSignals runs ledger.signals: this audit's signals against the last clean audit's. It
// runs for --since only (a full audit reads every ARK and records the signals anew).
func (a *audit) compareSignals(ctx context.Context, ln *lane) error {
	b := a.base.signals
	if b == nil {
		return nil
	}
	now := a.sig
	when := a.base.at.UTC().Format(time.RFC3339)
	full := "; run a full audit (arkhe verify without --since)"
	noDelete, appendOnly := a.noDelete, a.appendOnly
	add := func(subject, detail string) { a.rec.add(CheckSignals, subject, "", detail+full) }
	if b.Schema != now.Schema {
		add("schema", fmt.Sprintf("the ledger's columns, constraints, indexes or migrations changed since the last full audit (%s)", when))
	}
	nodes := map[string]bool{}
	for n := range b.Nodes {
		nodes[n] = true
	}
	for n := range now.Nodes {
		nodes[n] = true
	}
	for _, node := range sortedKeys(nodes) {
		was, ok1 := b.Nodes[node]
		is, ok2 := now.Nodes[node]
		on := ""
		if node != localNode {
			on = " on node " + node
		}
		switch {
		case !ok1:
			add("node "+node, fmt.Sprintf("node %s joined the ledger since the last full audit (%s): its tables were not recorded", node, when))
			continue
		case !ok2:
			add("node "+node, fmt.Sprintf("node %s is no longer among the ledger's nodes", node))
			continue
		}
		reset := was.StatsReset != is.StatsReset
		if reset {
			add("statistics"+on, fmt.Sprintf("the statistics%s were reset at %s (pg_stat_reset or a reset of one table's counters) since the last full audit (%s): the counters cannot tell what changed", on, is.StatsReset, when))
		}
		rels := map[string]bool{}
		for r := range was.Tables {
			rels[r] = true
		}
		for r := range is.Tables {
			rels[r] = true
		}
		var arkUpd, changeIns int64
		for _, r := range sortedKeys(rels) {
			w, ok1 := was.Tables[r]
			v, ok2 := is.Tables[r]
			table := tableOf(r)
			subject := "table " + r + on
			switch {
			case !ok1:
				add(subject, fmt.Sprintf("%s appeared since the last full audit (%s)", subject, when))
				continue
			case !ok2:
				add(subject, fmt.Sprintf("%s is gone since the last full audit (%s): dropped, or its shard moved", subject, when))
				continue
			}
			if w[0] != v[0] {
				add(subject, fmt.Sprintf("%s was rewritten since the last full audit (%s): its file node changed from %d to %d (TRUNCATE, VACUUM FULL, CLUSTER or a rewriting ALTER TABLE)", subject, when, w[0], v[0]))
			}
			if reset {
				continue
			}
			if v[1] < w[1] || v[2] < w[2] || v[3] < w[3] || v[4] < w[4] {
				add(subject, fmt.Sprintf("the statistics counters of %s went back since the last full audit (%s): reset, or lost in a crash; they cannot tell what changed", subject, when))
				continue
			}
			if d := v[3] - w[3]; d > 0 && noDelete[table] {
				add(subject, fmt.Sprintf("%d rows were deleted from %s since the last full audit (%s), which the ledger refuses: deleted behind its triggers", d, subject, when))
			}
			if d := v[2] - w[2]; d > 0 && appendOnly[table] {
				add(subject, fmt.Sprintf("%d rows of %s were updated since the last full audit (%s), which the ledger refuses: updated behind its triggers", d, subject, when))
			}
			switch table {
			case "ark":
				arkUpd += v[2] - w[2]
				if a.since && v[1]-w[1] > a.fresh {
					add(subject, fmt.Sprintf("%d rows were inserted into %s since the last full audit (%s), %d of them numbered after it: rows inserted behind the paths with a chosen number, or by a transaction still open during that audit", v[1]-w[1], subject, when, a.fresh))
				}
			case "ark_change":
				changeIns += v[1] - w[1]
			}
		}
		if arkUpd > changeIns {
			add("table ark"+on, fmt.Sprintf("%d rows of ark were updated%s since the last full audit (%s) but only %d ARK_CHANGE rows written (the repoint path writes one per update): %d changed behind the path", arkUpd, on, when, changeIns, arkUpd-changeIns))
		}
	}
	return nil
}

// tableOf returns the table of a relation name: "ark_102008" -> "ark" (a shard), "ark" -> "ark".
func tableOf(rel string) string {
	if i := strings.LastIndexByte(rel, '_'); i > 0 {
		if _, err := strconv.ParseInt(rel[i+1:], 10, 64); err == nil {
			return rel[:i]
		}
	}
	return rel
}

// flushOwnStatistics makes the idle connections of pool send the statistics they hold to the
// server (pg_stat_force_next_flush, PostgreSQL 15 and later; a no-op before): a backend sends
// its counters up to seconds after a transaction, so writes made through this process's own
// pool, just before the audit, would otherwise reach the counters only after it.
func flushOwnStatistics(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range pool.AcquireAllIdle(ctx) {
		major, _, _ := strings.Cut(c.Conn().PgConn().ParameterStatus("server_version"), ".")
		if v, err := strconv.Atoi(major); err == nil && v >= 15 {
			_, _ = c.Exec(ctx, `select pg_stat_force_next_flush()`)
		}
		c.Release()
	}
}
