package targethealth

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// linkStateColumns are the link_state columns scanStateRow reads, in its order.
const linkStateColumns = `l.target, l.checked_at, l.final_url, l.status_code, l.error_class, l.outcome,
	l.mime_type, l.size, l.duration_ms, l.body_hash, l.hash_alg, l.consecutive_failures,
	l.first_failure_at, l.last_success_at, l.broken, l.good_host, l.good_media_type, l.good_size`

// stateRow holds the nullable link_state columns of one row.
type stateRow struct {
	target, finalURL, errClass, outcome, mime, hashAlg, goodHost, goodMT *string
	checked, firstFail, lastSuccess                                      *time.Time
	status                                                               *int16
	size, goodSize                                                       *int64
	durMS, failures                                                      *int32
	hash                                                                 []byte
	broken                                                               *bool
}

func (r *stateRow) dest() []any {
	return []any{&r.target, &r.checked, &r.finalURL, &r.status, &r.errClass, &r.outcome, &r.mime, &r.size,
		&r.durMS, &r.hash, &r.hashAlg, &r.failures, &r.firstFail, &r.lastSuccess, &r.broken, &r.goodHost,
		&r.goodMT, &r.goodSize}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func tm(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

// state rebuilds the linkcheck.State a row stores; the zero State (never checked) when the row
// is all NULL (no link_state row).
func (r *stateRow) state() linkcheck.State {
	s := linkcheck.State{Target: str(r.target), GoodSize: -1, GoodHost: str(r.goodHost), GoodMediaType: str(r.goodMT),
		FirstFailure: tm(r.firstFail), LastSuccess: tm(r.lastSuccess)}
	if r.failures != nil {
		s.ConsecutiveFailures = int(*r.failures)
	}
	if r.broken != nil {
		s.Broken = *r.broken
	}
	if r.goodSize != nil {
		s.GoodSize = *r.goodSize
	}
	if r.checked == nil {
		return s
	}
	c := linkcheck.Check{Time: r.checked.UTC(), Target: s.Target, FinalURL: str(r.finalURL),
		Error: linkcheck.ErrorClass(str(r.errClass)), Outcome: linkcheck.Outcome(str(r.outcome)),
		MIME: str(r.mime), Size: -1, HashAlg: str(r.hashAlg)}
	if r.status != nil {
		c.Status = int(*r.status)
	}
	if r.size != nil {
		c.Size = *r.size
	}
	if r.durMS != nil {
		c.Duration = time.Duration(*r.durMS) * time.Millisecond
	}
	if r.hash != nil {
		c.BodyHash = hex.EncodeToString(r.hash)
	}
	s.Last = c
	return s
}

// stateArgs returns the named arguments of the link_state columns that hold s (a State whose
// check was of s.Target), due at due.
func stateArgs(s linkcheck.State, redirects int, due time.Time) (pgx.NamedArgs, error) {
	c := s.Last
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	optTime := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	optSize := func(n int64) *int64 {
		if n < 0 {
			return nil
		}
		return &n
	}
	a := pgx.NamedArgs{"target": s.Target, "checked_at": optTime(c.Time), "final_url": opt(c.FinalURL),
		"error_class": opt(string(c.Error)), "outcome": opt(string(c.Outcome)), "mime_type": opt(c.MIME),
		"size": optSize(c.Size), "hash_alg": opt(c.HashAlg), "consecutive_failures": s.ConsecutiveFailures,
		"first_failure_at": optTime(s.FirstFailure), "last_success_at": optTime(s.LastSuccess),
		"broken": s.Broken, "good_host": opt(s.GoodHost), "good_media_type": opt(s.GoodMediaType),
		"good_size": optSize(s.GoodSize), "due_at": optTime(due)}
	var status *int16
	if c.Status > 0 {
		v := int16(c.Status)
		status = &v
	}
	a["status_code"] = status
	var dur *int32
	if c.Duration > 0 {
		v := int32(min(c.Duration.Milliseconds(), 1<<31-1))
		dur = &v
	}
	a["duration_ms"] = dur
	var red *int16
	if !c.Time.IsZero() {
		v := int16(min(redirects, 1<<15-1))
		red = &v
	}
	a["redirects"] = red
	var hash []byte
	if c.BodyHash != "" {
		b, err := hex.DecodeString(c.BodyHash)
		if err != nil {
			return nil, fmt.Errorf("body hash %q of %s is not hex: %w", c.BodyHash, s.Target, err)
		}
		hash = b
	}
	a["body_hash"] = hash
	return a, nil
}

// eventArgs adds the transitions ts as the arrays ev_kinds, ev_ats, ev_reasons and their
// number ev_n to a.
func eventArgs(a pgx.NamedArgs, ts []linkcheck.Transition) {
	kinds := make([]string, len(ts))
	ats := make([]time.Time, len(ts))
	reasons := make([]string, len(ts))
	for i, t := range ts {
		kinds[i], ats[i], reasons[i] = string(t.Kind), t.Time, t.Reason
	}
	a["ev_kinds"], a["ev_ats"], a["ev_reasons"], a["ev_n"] = kinds, ats, reasons, len(ts)
}

// linkStateInsertColumns and linkStateInsertValues are the columns a check writes and the
// named arguments stateArgs gives them.
const (
	linkStateInsertColumns = `target, checked_at, final_url, status_code, error_class, outcome, mime_type, size,
		duration_ms, redirects, body_hash, hash_alg, consecutive_failures, first_failure_at, last_success_at,
		broken, good_host, good_media_type, good_size, due_at`
	linkStateInsertValues = `@target::text, @checked_at::timestamptz, @final_url::text, @status_code::smallint,
		@error_class::text, @outcome::text, @mime_type::text, @size::bigint, @duration_ms::integer,
		@redirects::smallint, @body_hash::bytea, @hash_alg::text, @consecutive_failures::integer,
		@first_failure_at::timestamptz, @last_success_at::timestamptz, @broken::boolean, @good_host::text,
		@good_media_type::text, @good_size::bigint, @due_at::timestamptz`
)
