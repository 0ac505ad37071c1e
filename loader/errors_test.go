package loader_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/arkhe-ledger/arkhe/loader"
)

// TestErrorPredicates: each predicate answers for its own error type, wrapped or not, and for
// nothing else.
func TestErrorPredicates(t *testing.T) {
	reach := &loader.ReachError{ClientID: "c1", Rule: "the client is deactivated"}
	fault := &loader.FaultError{Cause: "the connection was lost", Err: errors.New("EOF"), Attempts: 3}
	other := errors.New("other")
	for _, c := range []struct {
		err          error
		reach, rerun bool
	}{
		{reach, true, false},
		{fmt.Errorf("mint: %w", reach), true, false},
		{fault, false, true},
		{fmt.Errorf("batch 3: %w", fault), false, true},
		{other, false, false},
		{nil, false, false},
	} {
		if got := loader.IsReachRefused(c.err); got != c.reach {
			t.Errorf("IsReachRefused(%v) = %v, want %v", c.err, got, c.reach)
		}
		if got := loader.SafeToRerun(c.err); got != c.rerun {
			t.Errorf("SafeToRerun(%v) = %v, want %v", c.err, got, c.rerun)
		}
	}
}
