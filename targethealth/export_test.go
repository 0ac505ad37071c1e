package targethealth

import (
	"time"

	"github.com/jackc/pgx/v5"
)

// DueQueries are the page queries of the source's failing and good phases, for the plan test.
var DueQueries = map[string]string{"link_state_due_failing": linkDueFailingQuery, "link_state_due_good": linkDueGoodQuery}

// DueArgs are the arguments of a first page of those queries at now, nothing selected or excluded.
func DueArgs(now time.Time) pgx.NamedArgs {
	a := linkSel{exHosts: map[string]bool{}}.args()
	a["now"], a["cur_due"], a["cur_key"], a["page"] = now, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "", 1000
	return a
}
