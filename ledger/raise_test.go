package ledger_test

import (
	"context"
	"testing"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestRaiseCountersPlainSQL is the promise of arkhe_raise_ark_seq in plain SQL: only the owner
// and the operator may call it (a writer and an auditor are refused, 42501), it raises ark.seq's
// sequence and a shoulder's draws to the floor it is given, never lowers either, and refuses a
// negative number.
func TestRaiseCountersPlainSQL(t *testing.T) {
	t.Parallel()
	r := newRoleLedger(t)
	ctx := context.Background()
	su := r.l
	must(t, firstErr(su.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
	must(t, firstErr(su.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	writer := r.login(t, "w", r.roles.Writer)
	auditor := r.login(t, "a", r.roles.Auditor)
	operator := r.login(t, "o", r.roles.Operator)
	owner := r.login(t, "own", r.roles.Owner)
	const call = `select * from arkhe_raise_ark_seq($1, '{99999/x9}', '{40}')`
	refusedAs(t, "writer", writer.Pool, ledger.CodeInsufficientPrivilege, call, int64(1))
	refusedAs(t, "auditor", auditor.Pool, ledger.CodeInsufficientPrivilege, call, int64(1))
	refusedAs(t, "writer", writer.Pool, ledger.CodeInsufficientPrivilege, `select setval(pg_get_serial_sequence('ark', 'seq'), 1)`)

	var next int64
	must(t, su.Pool.QueryRow(ctx, `select coalesce(pg_sequence_last_value(pg_get_serial_sequence('ark', 'seq')::regclass), 0)`).Scan(&next))
	floor := ledger.Floor{HighWater: next + 1000, Draws: map[string]int64{"99999/x9": 40, "99999/zz": 5}}
	got, err := ledger.RaiseCounters(ctx, operator.Pool, floor)
	must(t, err)
	if len(got) != 3 || got[0] != (ledger.Raised{What: "ark.seq", Was: next, To: next + 1000}) ||
		got[1] != (ledger.Raised{What: "shoulder 99999/x9", Was: 0, To: 40}) || got[2] != (ledger.Raised{What: "shoulder 99999/zz", NoShoulder: true}) {
		t.Errorf("first raise: %+v", got)
	}
	acceptedAs(t, "writer", writer.Pool, importRowSQL, "raised")
	var seq, draws int64
	must(t, su.Pool.QueryRow(ctx, `select seq from ark where ark = '99999/raised'`).Scan(&seq))
	if seq != next+1001 {
		t.Errorf("the ARK inserted after the raise has seq %d, want %d", seq, next+1001)
	}
	// again, and lower: nothing changes
	got, err = ledger.RaiseCounters(ctx, owner.Pool, ledger.Floor{HighWater: 5, Draws: map[string]int64{"99999/x9": 40}})
	must(t, err)
	if len(got) != 0 {
		t.Errorf("a lower floor raised %+v", got)
	}
	must(t, su.Pool.QueryRow(ctx, `select draws from shoulder_tally t join shoulder s on s.id = t.shoulder_id where s.shoulder = '/x9'`).Scan(&draws))
	if draws != 40 {
		t.Errorf("draws %d after the raises, want 40", draws)
	}
	refusedAs(t, "operator", operator.Pool, "22023", `select * from arkhe_raise_ark_seq(-1, '{}', '{}')`)
	refusedAs(t, "operator", operator.Pool, "22023", `select * from arkhe_raise_ark_seq(1, '{99999/x9}', '{-3}')`)
	refusedAs(t, "operator", operator.Pool, "22023", `select * from arkhe_raise_ark_seq(1, '{99999/x9}', '{}')`)
}

// importRowSQL imports one ARK 99999/<$1> in /x9 by a new import run without a client.
const importRowSQL = `with r as (insert into import_run (source_file, format) values ('f', 'mint-map') returning id)
	insert into ark (ark, naan, shoulder_id, assigned_name, import_run_id)
	select '99999/' || $1::text, '99999', s.id, $1::text, r.id from shoulder s, r where s.naan = '99999' and s.shoulder = '/x9'`
