package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// columnPrivileges are the privileges TestRoleColumnPrivileges lists per column (SELECT reads,
// INSERT and UPDATE write) and per table (DELETE, TRUNCATE).
var columnPrivileges = []string{"SELECT", "INSERT", "UPDATE"}
var tablePrivileges = []string{"DELETE", "TRUNCATE"}

// expectedPrivileges is what each role but the owner (who owns every table and holds every
// privilege) may do, keyed "role table privilege": "*" for every column of the table (or, for
// DELETE and TRUNCATE, the table), else the columns in the table's order. A key that is absent
// is a privilege the role does not hold on any column. No role here reads credential.hashed or
// key_session.token, and the writer reads no column of credential.
var expectedPrivileges = map[string]string{
	"auditor ark SELECT":                 "*",
	"auditor ark_change SELECT":          "*",
	"auditor audit_event INSERT":         "*",
	"auditor audit_event SELECT":         "*",
	"auditor audit_summary INSERT":       "*",
	"auditor audit_summary SELECT":       "*",
	"auditor client SELECT":              "*",
	"auditor credential SELECT":          "id client_pk kind prefix active failed_attempts locked_until created_at revoked_at last_used_at",
	"auditor import_run SELECT":          "*",
	"auditor import_skipped SELECT":      "*",
	"auditor key_session SELECT":         "backend login client_pk prefix at",
	"auditor ledger_setting SELECT":      "*",
	"auditor link_event SELECT":          "*",
	"auditor link_exclusion SELECT":      "*",
	"auditor link_state SELECT":          "*",
	"auditor manager SELECT":             "*",
	"auditor mint_one_tally SELECT":      "*",
	"auditor mint_quota SELECT":          "*",
	"auditor mint_receipt SELECT":        "*",
	"auditor naan SELECT":                "*",
	"auditor receipt SELECT":             "*",
	"auditor schema_migration SELECT":    "*",
	"auditor shoulder SELECT":            "*",
	"auditor shoulder_tally SELECT":      "*",
	"auditor unknown_subject SELECT":     "*",
	"auditor ark_update_stage SELECT":    "*",
	"auditor ark_update_verdict SELECT":  "*",
	"auditor update_receipt SELECT":      "*",
	"operator ark SELECT":                "*",
	"operator ark_change SELECT":         "*",
	"operator audit_event INSERT":        "*",
	"operator audit_event SELECT":        "*",
	"operator audit_summary SELECT":      "*",
	"operator client INSERT":             "*",
	"operator client SELECT":             "*",
	"operator client UPDATE":             "*",
	"operator credential INSERT":         "*",
	"operator credential SELECT":         "id client_pk kind prefix active failed_attempts locked_until created_at revoked_at last_used_at",
	"operator credential UPDATE":         "active revoked_at",
	"operator import_run SELECT":         "*",
	"operator import_skipped SELECT":     "*",
	"operator key_session SELECT":        "backend login client_pk prefix at",
	"operator ledger_setting SELECT":     "*",
	"operator link_event SELECT":         "*",
	"operator link_exclusion INSERT":     "*",
	"operator link_exclusion SELECT":     "*",
	"operator link_exclusion UPDATE":     "*",
	"operator link_state SELECT":         "*",
	"operator manager INSERT":            "*",
	"operator manager SELECT":            "*",
	"operator manager UPDATE":            "*",
	"operator mint_one_tally SELECT":     "*",
	"operator mint_quota SELECT":         "*",
	"operator mint_receipt SELECT":       "*",
	"operator naan INSERT":               "*",
	"operator naan SELECT":               "*",
	"operator naan UPDATE":               "*",
	"operator receipt SELECT":            "*",
	"operator schema_migration SELECT":   "*",
	"operator shoulder INSERT":           "*",
	"operator shoulder SELECT":           "*",
	"operator shoulder UPDATE":           "*",
	"operator shoulder_tally SELECT":     "*",
	"operator unknown_subject SELECT":    "*",
	"resolver ark SELECT":                "ark naan shoulder_id url commitment erc_who erc_what erc_when status tombstone_reason tombstoned_at",
	"resolver manager SELECT":            "id name",
	"resolver naan SELECT":               "naan name is_authoritative redirect na_policy who erc_where registered_at",
	"resolver schema_migration SELECT":   "version",
	"resolver shoulder SELECT":           "id naan shoulder manager_id redirect status created_at",
	"operator ark_update_stage SELECT":   "*",
	"operator ark_update_verdict SELECT": "*",
	"operator update_receipt SELECT":     "*",
	"writer ark INSERT":                  "*",
	"writer ark SELECT":                  "*",
	"writer ark_change SELECT":           "*",
	"writer ark_update_stage INSERT":     "*",
	"writer audit_event INSERT":          "*",
	"writer audit_event SELECT":          "*",
	"writer audit_summary SELECT":        "*",
	"writer client SELECT":               "*",
	"writer import_run INSERT":           "*",
	"writer import_run SELECT":           "*",
	"writer import_run UPDATE":           "finished_at digest counts",
	"writer import_skipped INSERT":       "*",
	"writer import_skipped SELECT":       "*",
	"writer key_session SELECT":          "backend login client_pk prefix at",
	"writer ledger_setting SELECT":       "*",
	"writer link_event INSERT":           "*",
	"writer link_event SELECT":           "*",
	"writer link_exclusion SELECT":       "*",
	"writer link_state INSERT":           "*",
	"writer link_state SELECT":           "*",
	"writer link_state UPDATE":           "*",
	"writer manager SELECT":              "*",
	"writer mint_quota INSERT":           "*",
	"writer mint_one_tally SELECT":       "*",
	"writer mint_quota SELECT":           "*",
	"writer mint_quota UPDATE":           "*",
	"writer mint_receipt SELECT":         "*",
	"writer naan INSERT":                 "*",
	"writer naan SELECT":                 "*",
	"writer naan UPDATE":                 "name redirect na_policy who erc_where note registered_at",
	"writer receipt INSERT":              "*",
	"writer receipt SELECT":              "*",
	"writer schema_migration SELECT":     "*",
	"writer shoulder INSERT":             "*",
	"writer shoulder SELECT":             "*",
	"writer shoulder UPDATE":             "redirect minter note",
	"writer shoulder_tally INSERT":       "*",
	"writer shoulder_tally SELECT":       "*",
	"writer shoulder_tally UPDATE":       "*",
	"writer unknown_subject SELECT":      "*",
	"writer ark_update_stage SELECT":     "*",
	"writer ark_update_verdict SELECT":   "*",
	"writer update_receipt SELECT":       "*",
}

// shardSuffix is the suffix of a Citus shard's name: the table's name, "_", the shard ID.
var shardSuffix = regexp.MustCompile(`_[0-9]+$`)

// privilegeLines lists, on the node behind pool, what role (of kind) may do on every table and
// view of the ledger's schema, as "kind table privilege" -> columns (see expectedPrivileges).
// A Citus shard counts as its table; a shard whose privileges differ from its table's is an
// error naming it. Relations of extensions (Citus's views) are left out.
func privilegeLines(t *testing.T, pool *pgxpool.Pool, kind, role string) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
		select c.relname, p.priv, count(*) as columns,
		       coalesce(string_agg(a.attname, ' ' order by a.attnum) filter (where has_column_privilege($1, c.oid, a.attnum, p.priv)), '')
		from pg_class c
		join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
		cross join unnest($2::text[]) p(priv)
		where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
		  and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
		group by c.relname, p.priv
		union all
		select c.relname, p.priv, 1, case when has_table_privilege($1, c.oid, p.priv) then '*' else '' end
		from pg_class c cross join unnest($3::text[]) p(priv)
		where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
		  and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')`,
		role, columnPrivileges, tablePrivileges)
	must(t, err)
	type line struct {
		rel, priv, cols string
		n               int
	}
	var lines []line
	tables := map[string]bool{}
	for rows.Next() {
		var l line
		must(t, rows.Scan(&l.rel, &l.priv, &l.n, &l.cols))
		lines = append(lines, l)
		tables[l.rel] = true
	}
	must(t, rows.Err())
	out := map[string]string{}
	from := map[string]string{}
	for _, l := range lines {
		table := l.rel
		if base := shardSuffix.ReplaceAllString(l.rel, ""); base != l.rel && tables[base] {
			table = base
		}
		if l.cols == "" {
			l.cols = "-"
		} else if l.n > 1 && len(strings.Fields(l.cols)) == l.n {
			l.cols = "*"
		}
		key := kind + " " + table + " " + l.priv
		if prev, ok := out[key]; ok && prev != l.cols {
			t.Errorf("%s: %s %s on %s is %q, on %s %q: a shard's privileges differ from its table's", kind, role, l.priv, l.rel, l.cols, from[key], prev)
			continue
		}
		out[key], from[key] = l.cols, l.rel
	}
	for k, v := range out {
		if v == "-" {
			delete(out, k)
		}
	}
	return out
}

// TestRoleColumnPrivileges lists, for every role `arkhe init --roles` creates, the columns it can
// read (SELECT) and write (INSERT, UPDATE) and the tables it can empty (DELETE, TRUNCATE), on
// every table and view of the ledger, on every node, and compares with expectedPrivileges:
// only the owner reads the key hashes, and a writer login cannot even count credential's rows.
// The roles' API key paths still work without those privileges.
func TestRoleColumnPrivileges(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		r := newRoleLedgerIn(t, db)
		pools := []*pgxpool.Pool{db.Pool}
		for _, u := range db.WorkerURLs {
			p, err := pgxpool.New(ctx, u)
			must(t, err)
			t.Cleanup(p.Close)
			pools = append(pools, p)
		}
		var kinds [][2]string
		rows, err := db.Pool.Query(ctx, `select substr(name, 6), value from ledger_setting where name like 'role.%' order by 1`)
		must(t, err)
		for rows.Next() {
			var k [2]string
			must(t, rows.Scan(&k[0], &k[1]))
			kinds = append(kinds, k)
		}
		must(t, rows.Err())
		if len(kinds) < len(ledger.RoleKinds()) {
			t.Fatalf("ledger_setting records roles %v, want at least %v", kinds, ledger.RoleKinds())
		}
		for i, pool := range pools {
			node := "single"
			if db.Citus() {
				node = map[bool]string{true: "coordinator", false: fmt.Sprintf("worker %d", i)}[i == 0]
			}
			got := map[string]string{}
			for _, k := range kinds {
				for key, v := range privilegeLines(t, pool, k[0], k[1]) {
					got[key] = v
				}
			}
			want := map[string]string{}
			for key, v := range expectedPrivileges {
				// on a Citus worker schema_migration is a table of the node's own, granted to no
				// role: the ledger's record of its migrations is the coordinator's
				if i > 0 && strings.Contains(key, " schema_migration ") {
					continue
				}
				want[key] = v
			}
			// the owner holds every privilege on every table
			for key := range got {
				if kind, rest, _ := strings.Cut(key, " "); kind == ledger.RoleOwner {
					want[ledger.RoleOwner+" "+rest] = "*"
				}
			}
			var diff []string
			for _, key := range sortedKeys(got, want) {
				if got[key] != want[key] {
					diff = append(diff, fmt.Sprintf("%s: %q, want %q", key, got[key], want[key]))
				}
			}
			if len(diff) > 0 {
				var lit []string
				for _, key := range sortedKeys(got, nil) {
					if !strings.HasPrefix(key, ledger.RoleOwner+" ") {
						lit = append(lit, fmt.Sprintf("\t%q: %q,", key, got[key]))
					}
				}
				t.Errorf("%s: the roles' privileges differ from expectedPrivileges:\n%s\nall of them now (review before taking them as expected):\n%s",
					node, strings.Join(diff, "\n"), strings.Join(lit, "\n"))
			}
			// raising the counters after a restore: the owner and the operator alone
			for _, k := range kinds {
				var can bool
				must(t, pool.QueryRow(ctx, `select has_function_privilege($1, 'arkhe_raise_ark_seq(bigint, text[], bigint[])', 'EXECUTE')`, k[1]).Scan(&can))
				if want := k[0] == ledger.RoleOwner || k[0] == ledger.RoleOperator; can != want {
					t.Errorf("%s: role %s (%s) executes arkhe_raise_ark_seq: %v, want %v", node, k[1], k[0], can, want)
				}
			}
			// the key hashes: the owner alone
			for _, k := range kinds {
				for _, col := range [][2]string{{"credential", "hashed"}, {"key_session", "token"}} {
					var can bool
					must(t, pool.QueryRow(ctx, `select has_column_privilege($1, $2, $3, 'SELECT')`, k[1], col[0], col[1]).Scan(&can))
					if can != (k[0] == ledger.RoleOwner) {
						t.Errorf("%s: role %s (%s) reads %s.%s: %v, want %v", node, k[1], k[0], col[0], col[1], can, k[0] == ledger.RoleOwner)
					}
				}
			}
		}

		// A writer login: credential is closed to it, and its key checks still work.
		su := r.l
		ledger.SetKeyParams(su, ledger.CheapKeyParams())
		must(t, firstErr(su.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
		must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
		must(t, su.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
		key, err := su.CreateKey(ctx, "svc")
		must(t, err)
		writer := r.login(t, "w", r.roles.Writer)
		ledger.SetKeyParams(writer, ledger.CheapKeyParams())
		refusedAs(t, "writer", writer.Pool, ledger.CodeInsufficientPrivilege, `select count(*) from credential`)
		refusedAs(t, "writer", writer.Pool, ledger.CodeInsufficientPrivilege, `select prefix from credential`)
		must(t, writer.Authenticate(ctx, "svc", key.Key))
		wrong := key.Key[:len(key.Key)-4] + "aaaa"
		var ke *ledger.KeyError
		for i := 1; i <= ledger.KeyMaxFailures; i++ {
			err := writer.Authenticate(ctx, "svc", wrong)
			if !errors.As(err, &ke) {
				t.Fatalf("wrong key, attempt %d: %v, want a KeyError", i, err)
			}
		}
		if ke.Reason != "locked" || ke.LockedUntil == nil {
			t.Errorf("after %d wrong keys the writer is told %q, locked until %v; want locked, with the time", ledger.KeyMaxFailures, ke.Reason, ke.LockedUntil)
		}
		// the operator lists and revokes keys without reading a hash
		operator := r.login(t, "op", r.roles.Operator)
		keys, err := operator.ListKeys(ctx, "svc")
		must(t, err)
		if len(keys) != 1 || keys[0].Prefix != key.Prefix || keys[0].LockedUntil == nil {
			t.Errorf("operator's key list %+v, want key %s, locked", keys, key.Prefix)
		}
		changed, err := operator.RevokeKey(ctx, key.Prefix)
		must(t, err)
		if !changed {
			t.Error("the operator's revocation changed nothing")
		}
	})
}

// sortedKeys returns the keys of a and b, sorted, once each.
func sortedKeys(a, b map[string]string) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExportMarkPrivileges: arkhe_export_mark(), which holds back every writer of ark and
// ark_change until its caller's transaction ends, is executable by the roles that export
// (operator, writer, auditor) and the owner, and refused (SQLSTATE 42501) to the resolver role
// and to a login of no role (PUBLIC), in plain SQL.
func TestExportMarkPrivileges(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		r := newRoleLedgerIn(t, db)
		want := map[string]bool{r.roles.Owner: true, r.roles.Operator: true, r.roles.Writer: true,
			r.roles.Auditor: true, r.roles.Resolver: false, "public": false}
		for role, can := range want {
			var got bool
			must(t, db.Pool.QueryRow(ctx, `select has_function_privilege($1, 'arkhe_export_mark()', 'EXECUTE')`, role).Scan(&got))
			if got != can {
				t.Errorf("has_function_privilege(%s, arkhe_export_mark(), EXECUTE) = %v, want %v", role, got, can)
			}
		}
		const mark = `select ark_mark, change_mark from arkhe_export_mark()`
		refusedAs(t, "resolver", r.login(t, "res", r.roles.Resolver).Pool, ledger.CodeInsufficientPrivilege, mark)
		refusedAs(t, "a login of no role", r.login(t, "nobody").Pool, ledger.CodeInsufficientPrivilege, mark)
		for name, role := range map[string]string{"op": r.roles.Operator, "wr": r.roles.Writer, "au": r.roles.Auditor} {
			acceptedAs(t, role, r.login(t, name, role).Pool, mark)
		}
	})
}

// TestMintOnePrivileges: the writer runs the single mint and reads a key's state (as the owner:
// it reads no column of credential itself); the auditor and the resolver mint nothing, and a
// writer's mint is checked as any other (the key's state, the reach).
func TestMintOnePrivileges(t *testing.T) {
	t.Parallel()
	r := newRoleLedger(t)
	ctx := context.Background()
	l := r.l
	ledger.SetKeyParams(l, ledger.CheapKeyParams())
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	w := r.login(t, "w", r.roles.Writer)
	a := r.login(t, "a", r.roles.Auditor)
	mint := `select ark_mint_one('svc', $1, $2, '\x00112233445566778899aabbccddeeff', (select id from shoulder where shoulder = '/x9'), array[$2], null, null, null, null, null, null)`
	acceptedAs(t, "writer", w.Pool, mint, k.Prefix, "x9bcdfghjk")
	refusedAs(t, "auditor", a.Pool, ledger.CodeInsufficientPrivilege, mint, k.Prefix, "x9mnpqrstv")
	var state string
	must(t, w.Pool.QueryRow(ctx, `select state from arkhe_key_state($1)`, k.Prefix).Scan(&state))
	if state != "active" {
		t.Fatalf("arkhe_key_state as writer: %q, want active", state)
	}
	refusedAs(t, "writer", w.Pool, ledger.CodeInsufficientPrivilege, `select hashed from credential`)
	if n := count(t, l.Pool, `select count(*) from ark`); n != 1 {
		t.Fatalf("%d ARKs, want 1", n)
	}
}
