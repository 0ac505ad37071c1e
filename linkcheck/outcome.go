package linkcheck

// OutcomeOf returns the verdict a check's findings give, the rule Run applies
// to its own checks: inconclusive when Error is ErrBlocked (the guard refused
// the address: nothing was learnt of the target), failed when Error is any
// other class, good for a 2xx Status,
// inconclusive for 429 Too Many Requests, failed otherwise (no status, or any
// other status). An importer of another checker's findings uses it so that
// imported checks are judged the same way.
func OutcomeOf(c Check) Outcome { return outcomeOf(&c) }
