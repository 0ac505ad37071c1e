package ledger

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LinkDueQueries are the page queries of the source's failing and good phases, for the plan test.
var LinkDueQueries = map[string]string{"link_state_due_failing": linkDueFailingQuery, "link_state_due_good": linkDueGoodQuery}

// LinkDueArgs are the arguments of a first page of those queries at now, nothing selected or excluded.
func LinkDueArgs(now time.Time) pgx.NamedArgs {
	a := linkSel{exHosts: map[string]bool{}}.args()
	a["now"], a["cur_due"], a["cur_key"], a["page"] = now, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "", 1000
	return a
}

// MintSessionSetting returns setting name as worker's session of s has it once its session
// settings are made (OpenWorker, then connect, as before its first batch).
func MintSessionSetting(ctx context.Context, s *MintSink, worker int, name string) (string, error) {
	sw, err := s.OpenWorker(ctx, worker)
	if err != nil {
		return "", err
	}
	w := sw.(*mintWorker)
	defer w.Close()
	if err := w.connect(ctx); err != nil {
		return "", err
	}
	var v string
	err = w.conn.QueryRow(ctx, `select current_setting($1)`, name).Scan(&v)
	return v, err
}
