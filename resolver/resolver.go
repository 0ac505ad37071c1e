package resolver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
)

// MaxRequestTarget is the longest request target (path and query, as sent) the resolver reads,
// in octets: the longest ledger key (ark.MaxKey) with room for a host's prefix path, the label,
// %-escapes and an inflection. A longer one is a 400.
const MaxRequestTarget = 2048

// Outcome is what the resolver did with a request; it is the label of the requests metric.
type Outcome string

// The outcomes.
const (
	// OutcomeRedirect: 302 to the stored target of an ARK (a suffix appended).
	OutcomeRedirect Outcome = "redirect"
	// OutcomeForward: 302 to a forwarding NAAN's or shoulder's redirect, or to --forward-unknown.
	OutcomeForward Outcome = "forward"
	// OutcomeDescription: 200 with an ERC description (an inflection, or an ARK without a
	// target http or https).
	OutcomeDescription Outcome = "description"
	// OutcomeGone: 410 for a tombstoned (unavailable) ARK, with its description.
	OutcomeGone Outcome = "gone"
	// OutcomeNotFound: 404 (an unknown or reserved name, an unknown NAAN without a forward, a
	// path that is not an ARK).
	OutcomeNotFound Outcome = "not_found"
	// OutcomeBadRequest: 400 (or 405 for a method other than GET and HEAD).
	OutcomeBadRequest Outcome = "bad_request"
	// OutcomeUnavailable: 503, the ledger did not answer.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeClientClosed: 499 (nginx's code), the client went away (the request's context
	// ended) before the ledger answered: no answer reaches it, and it is no fault of the
	// ledger's (Config.OnError is not told).
	OutcomeClientClosed Outcome = "client_closed"
)

// Outcomes lists every Outcome, in the order the metrics write them.
func Outcomes() []Outcome {
	return []Outcome{OutcomeRedirect, OutcomeForward, OutcomeDescription, OutcomeGone, OutcomeNotFound,
		OutcomeBadRequest, OutcomeUnavailable, OutcomeClientClosed}
}

// Config is how a Resolver answers what the ledger does not hold.
type Config struct {
	// ForwardUnknown, when not "", is where a request under a NAAN the ledger does not know goes
	// (a global resolver such as https://n2t.net/): a template like a forwarding NAAN's redirect
	// (${pid}, ${content}, ${value}; without any, "ark:NAAN/name" is appended). "" answers 404.
	ForwardUnknown string
	// OnError, when not nil, is told every error of the ledger that made an answer a 503.
	OnError func(error)
	// Batch is the most lookups of concurrent requests read by one round trip on a single-node
	// ledger (the ARK lookups by one query, where ark = any($1), the NAAN lookups of names that
	// are no ARK by another, sent with it); 0 means DefaultBatch, 1 one query per lookup. A
	// Citus ledger always has one query per lookup, routed to the ARK's shard. Not negative.
	Batch int
	// BatchQueries is how many of those round trips run at once (each on a ledger connection of its
	// own); 0 means DefaultBatchQueries. Not negative.
	BatchQueries int
	// CacheEntries is the most ARK rows the cache holds (exact matches only; see Listen, which
	// must run for the cache to be used); 0 means no cache. Not negative.
	CacheEntries int
	// OnCacheError, when not nil, is told every failure of the cache's listener (each turned the
	// cache off until it listens again).
	OnCacheError func(error)
}

// Resolver answers ARK requests from the ledger: every request is one or two point lookups,
// or, for an ARK that was an exact match of an earlier request, none while the cache holds its
// row (Config.CacheEntries, Listen): a repoint or a tombstone is answered from the next request
// on without a cache, and once its notification arrived with one. On a single node the lookups
// of concurrent requests are read by one round trip (Config.Batch), each request's after it
// arrived.
type Resolver struct {
	pool   *pgxpool.Pool
	cfg    Config
	stats  *Stats
	layout *layout
	batch  *coalescer
	cache  *cache // nil: none
}

// New returns a resolver over pool (a ledger; its login needs only the resolver role's
// column privileges). Errors: a *ConfigError for a ForwardUnknown that is not an absolute http
// or https URL, or a negative Batch, BatchQueries or CacheEntries.
func New(pool *pgxpool.Pool, cfg Config) (*Resolver, error) {
	if cfg.ForwardUnknown != "" && !isHTTPURL(cfg.ForwardUnknown) {
		return nil, &ConfigError{Field: "ForwardUnknown", Reason: fmt.Sprintf("%q is not an absolute http or https URL", cfg.ForwardUnknown)}
	}
	if cfg.Batch < 0 || cfg.BatchQueries < 0 {
		return nil, &ConfigError{Field: "Batch", Reason: fmt.Sprintf("batch %d, %d queries: not negative", cfg.Batch, cfg.BatchQueries)}
	}
	if cfg.CacheEntries < 0 {
		return nil, &ConfigError{Field: "CacheEntries", Reason: fmt.Sprintf("%d: not negative", cfg.CacheEntries)}
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.BatchQueries == 0 {
		cfg.BatchQueries = DefaultBatchQueries
	}
	st, err := newStats()
	if err != nil {
		return nil, err
	}
	r := &Resolver{pool: pool, cfg: cfg, stats: st, layout: &layout{pool: pool},
		batch: &coalescer{pool: pool, maxBatch: cfg.Batch, maxQueries: cfg.BatchQueries}}
	if cfg.CacheEntries > 0 {
		r.cache = newCache(cfg.CacheEntries)
	}
	return r, nil
}

// Answer is the resolver's answer to one request.
type Answer struct {
	Outcome Outcome
	// Status is the HTTP status: 302, 200, 410, 404, 400 (or 405), 503.
	Status int
	// Location is the redirect's target (Status 302), else "".
	Location string
	// Description is the ERC description of an ARK, shoulder or NAAN (Status 200 and 410).
	Description *Description
	// Message is the short text of a 404, 400 or 503.
	Message string
	// JSON is true when the request asked for JSON in its query (?info&json).
	JSON bool
	// err is the ledger's error behind a 503.
	err error
}

// request is a request target taken apart.
type request struct {
	path       string // as sent, up to the query
	inflection bool   // ?, ??, ?info, any query, or a trailing %3F, %3F%3F, %3Finfo
	query      string // the query after the first "?" ("" for a bare "?"; "?" for "??")
	json       bool   // the query holds "json" (?info&json)
}

// parseTarget checks a request target (the path and query as sent) and takes it apart. The
// rules, each a *BadRequestError naming it: at most MaxRequestTarget octets; no control
// character (octets below 0x20, and 0x7f); no dot-segment ("..", also %-encoded) in the path.
func parseTarget(target string) (request, error) {
	if len(target) > MaxRequestTarget {
		return request{}, &BadRequestError{Rule: "request target too long",
			Detail: fmt.Sprintf("%d octets; the limit is %d (the longest ARK, %d octets, with its label and a host's prefix)", len(target), MaxRequestTarget, ark.MaxKey)}
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c < 0x20 || c == 0x7f {
			return request{}, &BadRequestError{Rule: "control character", Detail: fmt.Sprintf("octet 0x%02x at offset %d (an ARK holds none, draft-kunze-ark §2)", c, i)}
		}
	}
	r := request{path: target}
	if p, q, ok := strings.Cut(target, "?"); ok {
		r.path, r.query, r.inflection = p, q, true
	} else {
		// a client that cannot send a bare "?" sends it %-encoded
		low := strings.ToLower(target)
		for _, s := range [...]struct{ suffix, query string }{{"%3f%3f", "?"}, {"%3finfo", "info"}, {"%3f", ""}} {
			if strings.HasSuffix(low, s.suffix) {
				r.path, r.query, r.inflection = target[:len(target)-len(s.suffix)], s.query, true
				break
			}
		}
	}
	for rest := r.path; ; {
		seg, more, found := strings.Cut(rest, "/")
		if isDotDot(seg) {
			return request{}, &BadRequestError{Rule: "dot-segment", Detail: `a path segment ".." (RFC 3986 §3.3) is not part of an ARK`}
		}
		if !found {
			break
		}
		rest = more
	}
	for rest := r.query; ; {
		p, more, found := strings.Cut(rest, "&")
		if p == "json" {
			r.json = true
		}
		if !found {
			break
		}
		rest = more
	}
	return r, nil
}

// isDotDot reports whether seg is the segment "..", either dot %-encoded (any case).
func isDotDot(seg string) bool {
	switch len(seg) {
	case 2:
		return seg == ".."
	case 4:
		return seg[0] == '.' && isEncodedDot(seg[1:]) || isEncodedDot(seg[:3]) && seg[3] == '.'
	case 6:
		return isEncodedDot(seg[:3]) && isEncodedDot(seg[3:])
	}
	return false
}

// isEncodedDot reports whether s is "%2e" or "%2E".
func isEncodedDot(s string) bool { return s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e' }

// Resolve answers one GET (or HEAD) of target, the request target as sent (path and query,
// %-escapes as they are). It never returns a 500: a request it cannot read is a 400, a
// ledger that does not answer a 503 (Outcome unavailable), or a 499 (Outcome client_closed)
// when ctx ended first (the client went away).
//
// The rules, in order:
//   - the path, after anything before its first "/ark:" (a host's prefix), is normalized as
//     the ledger normalizes (package ark: label ark:/ or ark:, NAAN lowercased, hyphens removed,
//     %hh kept with its hex digits uppercased, runs of "/" and "." collapsed); a path without the
//     label is a 404, one the normalizer refuses a 400 naming its rule;
//   - the registered ARK is the longest of the name and its prefixes ending before a "/" or a
//     "." (suffix passthrough; the name is looked up first, its prefixes only when it is not an
//     ARK); the rest of the name (from that "/" or ".") is the suffix;
//   - a tombstoned ARK is a 410 with its description; a reserved one a 404, the same as an
//     unknown name (it is not published yet, and its existence is not disclosed);
//   - an inflection (?, ??, ?info, any query, a trailing %3F) answers the description (200);
//   - a target http or https answers 302 to it with the suffix appended; an ARK without one
//     answers its description (200);
//   - no ARK: an inflection of a registered shoulder answers the shoulder's description; the
//     longest shoulder with a redirect (shoulder.redirect) that the name starts with forwards,
//     then a NAAN that is not authoritative with a redirect (naan.redirect); a redirect is a
//     template, ${pid} = ark:/NAAN/name, ${content} = NAAN/name, ${value} = name, and one
//     without any gets ark:NAAN/name appended (the name with its suffix);
//   - a name under a NAAN of the ledger is then a 404 naming the NAAN; an unknown NAAN forwards
//     to Config.ForwardUnknown, or is a 404;
//   - a NAAN alone (ark:NAAN, ark:/NAAN/) answers the NAAN's description.
func (r *Resolver) Resolve(ctx context.Context, target string) Answer {
	req, err := parseTarget(target)
	if err != nil {
		return badRequest(err)
	}
	a := r.resolve(ctx, req)
	if a.Outcome == OutcomeUnavailable {
		if ctx.Err() != nil {
			return Answer{Outcome: OutcomeClientClosed, Status: 499, Message: "the client closed the request before the ledger answered"}
		}
		if r.cfg.OnError != nil {
			r.cfg.OnError(a.err)
		}
	}
	a.JSON = req.json
	return a
}

func badRequest(err error) Answer {
	return Answer{Outcome: OutcomeBadRequest, Status: 400, Message: err.Error()}
}

func (r *Resolver) unavailable(err error) Answer {
	return Answer{Outcome: OutcomeUnavailable, Status: 503, Message: "the ledger did not answer; try again", err: err}
}

func notFound(msg string) Answer { return Answer{Outcome: OutcomeNotFound, Status: 404, Message: msg} }

func (r *Resolver) resolve(ctx context.Context, req request) Answer {
	naanOnly, naan, err := naanAlone(req.path)
	if err != nil {
		return badRequest(err)
	}
	if naanOnly {
		return r.resolveNAAN(ctx, naan, req)
	}
	a, err := ark.ParseWith(req.path, ark.Options{Import: true})
	if err != nil {
		if errors.Is(err, ark.ErrNotARK) {
			return notFound("not an ARK: a resolver path is /ark:NAAN/name or /ark:/NAAN/name")
		}
		return badRequest(&BadRequestError{Rule: "ARK syntax", Detail: err.Error()})
	}
	row, found, err := r.lookupARK(ctx, a)
	if err != nil {
		return r.unavailable(err)
	}
	if found {
		return answerARK(a, row, req)
	}
	if req.inflection {
		d, ok, err := r.describeShoulder(ctx, a)
		if err != nil {
			return r.unavailable(err)
		}
		if ok {
			return Answer{Outcome: OutcomeDescription, Status: 200, Description: d}
		}
	}
	n, known, err := r.lookupNAAN(ctx, a.NAAN, "/"+a.Name)
	if err != nil {
		return r.unavailable(err)
	}
	if !known {
		return r.forwardUnknown(a.NAAN, a.Name, req)
	}
	if n.shoulderRedirect != "" {
		return forward(n.shoulderRedirect, a.NAAN, a.Name, req)
	}
	if !n.authoritative && n.redirect != "" {
		return forward(n.redirect, a.NAAN, a.Name, req)
	}
	return notFoundUnder(a, n)
}

// naanAlone reports whether path names a NAAN alone (ark:NAAN, ark:/NAAN/, with a host's
// prefix or not) and returns the NAAN normalized.
func naanAlone(path string) (bool, string, error) {
	i := labelAt(path)
	if i < 0 {
		return false, "", nil
	}
	rest := path[i+len("ark:"):]
	rest = strings.TrimPrefix(rest, "/")
	rest = strings.TrimRight(rest, "/.")
	if rest == "" || strings.ContainsAny(rest, "/") {
		return false, "", nil
	}
	a, err := ark.ParseWith("ark:"+rest+"/x", ark.Options{Import: true})
	if err != nil {
		return false, "", &BadRequestError{Rule: "NAAN syntax", Detail: err.Error()}
	}
	return true, a.NAAN, nil
}

// labelAt is the offset of the label "ark:" (any case) at the start of path or after its first
// "/ark:", as ark.Parse finds it; -1 when there is none.
func labelAt(path string) int {
	has := func(i int) bool {
		return len(path)-i >= 4 && path[i]|0x20 == 'a' && path[i+1]|0x20 == 'r' && path[i+2]|0x20 == 'k' && path[i+3] == ':'
	}
	if has(0) {
		return 0
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && has(i+1) {
			return i + 1
		}
	}
	return -1
}

// arkRow is what resolution reads of an ARK and its NAAN.
type arkRow struct {
	key, target, status          string
	reason, who, what, when, cmt string // "" where the ledger holds NULL
	tombstonedAt                 *time.Time
	policy, naanName             string // "" where the ledger holds NULL
}

// candidates returns the ledger keys a request may resolve through, the longest first: the
// name, then each prefix of it ending before a "/" or a ".".
func candidates(a ark.ARK) []string {
	keys := []string{a.Key()}
	for i := len(a.Name) - 1; i > 0; i-- {
		if c := a.Name[i]; c == '/' || c == '.' {
			keys = append(keys, a.NAAN+"/"+a.Name[:i])
		}
	}
	return keys
}

const arkColumns = `select a.ark, coalesce(a.url, ''), coalesce(a.status::text, 'public'), a.tombstone_reason, a.tombstoned_at,
		a.erc_who, a.erc_what, a.erc_when, a.commitment, n.na_policy, n.name
	from ark a left join naan n on n.naan = a.naan`

// arkColumnCount is the number of columns of arkColumns; arkTombstonedAt the index of its one
// column that is not text.
const (
	arkColumnCount  = 11
	arkTombstonedAt = 4
)

// arkQuery reads the ARK the name is; arkPrefixQuery the longest of its prefixes that is one,
// asked only when the name itself is not (an exact match is one index probe without a sort).
const (
	arkQuery       = arkColumns + ` where a.ark = $1`
	arkPrefixQuery = arkColumns + ` where a.ark = any($1::text[]) order by length(a.ark) desc limit 1`
)

func (r *Resolver) lookupARK(ctx context.Context, a ark.ARK) (arkRow, bool, error) {
	if r.cache == nil {
		return r.readARK(ctx, a, candidates(a))
	}
	key := a.Key()
	row, ok, state := r.cache.get(key)
	if ok {
		return row, true, nil
	}
	row, found, err := r.readARK(ctx, a, candidates(a))
	if err == nil && found && row.key == key {
		r.cache.put(state, row)
	}
	return row, found, err
}

// readARK reads the row of the longest of keys that is an ARK from the ledger.
func (r *Resolver) readARK(ctx context.Context, a ark.ARK, keys []string) (arkRow, bool, error) {
	if r.useBatches(ctx) {
		f, err := r.batch.lookupARK(ctx, keys)
		if err != nil {
			return arkRow{}, false, fmt.Errorf("resolver: look up %s: %w", keys[0], err)
		}
		return f.row, f.found, nil
	}
	row, found, err := r.queryARK(ctx, a, arkQuery, keys[0])
	if found || err != nil || len(keys) == 1 {
		return row, found, err
	}
	return r.queryARK(ctx, a, arkPrefixQuery, keys[1:])
}

func (r *Resolver) queryARK(ctx context.Context, a ark.ARK, q string, arg any) (arkRow, bool, error) {
	rows, err := r.pool.Query(ctx, q, arg)
	if err != nil {
		return arkRow{}, false, fmt.Errorf("resolver: look up %s: %w", a, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return arkRow{}, false, fmt.Errorf("resolver: look up %s: %w", a, err)
		}
		return arkRow{}, false, nil
	}
	row, err := readARKRow(rows)
	if err != nil {
		return arkRow{}, false, fmt.Errorf("resolver: look up %s: %w", a, err)
	}
	return row, true, nil
}

// readARKRow reads the current row of a query of arkColumns from its raw values: the text
// columns into one string of their own (one allocation a row), the time of a tombstone through
// the connection's type map.
func readARKRow(rows pgx.Rows) (arkRow, error) {
	vals := rows.RawValues()
	if len(vals) != arkColumnCount {
		return arkRow{}, fmt.Errorf("read ARK: %d columns, want %d", len(vals), arkColumnCount)
	}
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	var b strings.Builder
	b.Grow(n)
	for i, v := range vals {
		if i != arkTombstonedAt {
			b.Write(v)
		}
	}
	all, off := b.String(), 0
	next := func(i int) string {
		s := all[off : off+len(vals[i])]
		off += len(vals[i])
		return s
	}
	row := arkRow{key: next(0), target: next(1), status: next(2), reason: next(3)}
	row.who, row.what, row.when, row.cmt, row.policy, row.naanName = next(5), next(6), next(7), next(8), next(9), next(10)
	if v := vals[arkTombstonedAt]; v != nil {
		fd := rows.FieldDescriptions()[arkTombstonedAt]
		var t time.Time
		if err := rows.Conn().TypeMap().Scan(fd.DataTypeOID, fd.Format, v, &t); err != nil {
			return arkRow{}, fmt.Errorf("read ARK %s: tombstoned_at: %w", row.key, err)
		}
		row.tombstonedAt = &t
	}
	return row, nil
}

func answerARK(a ark.ARK, row arkRow, req request) Answer {
	suffix := a.Key()[len(row.key):]
	switch row.status {
	case "reserved":
		return notFoundUnder(a, naanRow{name: &row.naanName})
	case "unavailable":
		return Answer{Outcome: OutcomeGone, Status: 410, Description: arkDescription(row)}
	}
	if req.inflection || !isHTTPURL(row.target) {
		return Answer{Outcome: OutcomeDescription, Status: 200, Description: arkDescription(row)}
	}
	return Answer{Outcome: OutcomeRedirect, Status: 302, Location: row.target + suffix}
}

// naanRow is what resolution reads of a NAAN when no ARK matched.
type naanRow struct {
	authoritative    bool
	redirect         string
	shoulderRedirect string
	name             *string
}

const naanQuery = `select n.is_authoritative, coalesce(n.redirect, ''), n.name,
		coalesce((select s.redirect from shoulder s
			where s.naan = n.naan and coalesce(s.redirect, '') <> '' and starts_with($2, s.shoulder)
			order by length(s.shoulder) desc limit 1), '')
	from naan n where n.naan = $1`

// useBatches reports whether lookups are coalesced: Config.Batch above 1 on a single node.
func (r *Resolver) useBatches(ctx context.Context) bool {
	return r.cfg.Batch > 1 && r.layout.single(ctx)
}

func (r *Resolver) lookupNAAN(ctx context.Context, naan, storedName string) (naanRow, bool, error) {
	if r.useBatches(ctx) {
		f, err := r.batch.lookupNAAN(ctx, naanKey{naan: naan, name: storedName})
		if err != nil {
			return naanRow{}, false, fmt.Errorf("resolver: look up NAAN %s: %w", naan, err)
		}
		return f.row, f.known, nil
	}
	var n naanRow
	err := r.pool.QueryRow(ctx, naanQuery, naan, storedName).Scan(&n.authoritative, &n.redirect, &n.name, &n.shoulderRedirect)
	if errors.Is(err, pgx.ErrNoRows) {
		return n, false, nil
	}
	if err != nil {
		return n, false, fmt.Errorf("resolver: look up NAAN %s: %w", naan, err)
	}
	return n, true, nil
}

func notFoundUnder(a ark.ARK, n naanRow) Answer {
	name := ""
	if n.name != nil && *n.name != "" {
		name = " (" + *n.name + ")"
	}
	return notFound(fmt.Sprintf("no ARK %s is published under NAAN %s%s", a, a.NAAN, name))
}

func (r *Resolver) forwardUnknown(naan, name string, req request) Answer {
	if r.cfg.ForwardUnknown == "" {
		return notFound(fmt.Sprintf("NAAN %s is not one this resolver knows", naan))
	}
	return forward(r.cfg.ForwardUnknown, naan, name, req)
}

// forward answers 302 to redirect expanded for the ARK NAAN/name; an inflection's query is
// passed on when the expanded URL has none. A redirect that does not expand to an http or
// https URL is not followed (404).
func forward(redirect, naan, name string, req request) Answer {
	loc := expandTemplate(redirect, "ark:/"+naan+"/"+name, naan+"/"+name, name, "ark:"+naan+"/"+name)
	if req.inflection && !strings.Contains(loc, "?") {
		loc += "?" + req.query
	}
	if !isHTTPURL(loc) {
		return notFound(fmt.Sprintf("NAAN %s forwards to a URL that is not http or https", naan))
	}
	return Answer{Outcome: OutcomeForward, Status: 302, Location: loc}
}

// expandTemplate replaces ${pid}, ${content} and ${value} in tpl; a tpl without any of them
// gets appendARK appended (the same rule as the exports' forwarding rules).
func expandTemplate(tpl, pid, content, value, appendARK string) string {
	r := strings.NewReplacer("${pid}", pid, "${content}", content, "${value}", value)
	out := r.Replace(tpl)
	if !strings.Contains(tpl, "${pid}") && !strings.Contains(tpl, "${content}") && !strings.Contains(tpl, "${value}") {
		out += appendARK
	}
	return out
}

// isHTTPURL reports whether s is an absolute http or https URL with a host that can be sent
// in a Location header: no space or control character.
func isHTTPURL(s string) bool {
	low := strings.ToLower(s)
	var rest string
	switch {
	case strings.HasPrefix(low, "http://"):
		rest = s[len("http://"):]
	case strings.HasPrefix(low, "https://"):
		rest = s[len("https://"):]
	default:
		return false
	}
	if rest == "" || rest[0] == '/' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
