package export

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// Format is one of the files an export writes.
type Format string

// The export formats, named as `arkhe export` names its subcommands.
const (
	// Nginx: an nginx map of ARK → target (PATH) with the configuration that turns it into
	// redirects: PATH's name without its extension + "-http.conf" (include in the http block)
	// and + "-server.conf" (include in a server block).
	Nginx Format = "nginx"
	// Apache: an Apache RewriteMap text file of ARK → target (PATH) and the RewriteRules that
	// use it, PATH's name without its extension + "-rewrite.conf" (include in a virtual host).
	Apache Format = "apache"
	// N2TDump: an N2T egg binder dump, `db_dump -p` print format, the form `arkhe import
	// n2t-dump` reads.
	N2TDump Format = "n2t-dump"
	// JSONL: JSON Lines, one object per ARK with the columns of `arkhe report arks`.
	JSONL Format = "jsonl"
)

// Formats lists the export formats in the order `arkhe export` shows them.
func Formats() []Format { return []Format{Nginx, Apache, N2TDump, JSONL} }

// ParseFormat returns the Format named s; another name returns an error wrapping
// ErrUnknownFormat.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q: %w", s, ErrUnknownFormat)
}

// SuffixLevels is how many trailing components (each starting at a `/` or `.`) the nginx and
// Apache rules strip, one lookup each, looking for the longest registered ARK under a request.
const SuffixLevels = 8

// Config is one export.
type Config struct {
	Format Format
	// Path is the file written; the configuration files of Nginx and Apache go beside it.
	Path string
	// Since, when not nil, selects only the ARKs minted, imported or changed after it (a
	// watermark a previous export returned). Forwarding rules are written in full.
	Since *Watermark
	// Progress, when not nil, is called with the number of ARKs written so far, every 10,000.
	Progress func(arks int64)
}

// Result is what an export wrote.
type Result struct {
	ARKs      int64    // ARKs written
	Forwards  int      // forwarding rules written (NAANs and shoulders; nginx and Apache only)
	Files     []string // the files written, the data file first
	Watermark Watermark
}

// Forward is a forwarding rule: requests under Prefix ("NAAN/" for a NAAN that is not
// authoritative, "NAAN/shoulder" for a shoulder with a redirect) that no registered ARK
// matches go to Redirect, a template (see the package documentation).
type Forward struct {
	Prefix   string
	Redirect string
	Shoulder bool
}

// sink is one format's writer: ARKs one at a time, then the forwarding rules and the watermark
// at the end; commit renames every file into place, abort removes them.
type sink interface {
	ark(r *ledger.ARKRow) error
	commit(forwards []Forward, w Watermark) ([]string, error)
	abort()
}

// Run writes one export of the ledger. It first reads the watermark (Mark), then streams the
// ARKs (every ARK, or those after cfg.Since) in the ledger's physical order into the format's
// files, then the forwarding rules, and renames the files into place. On any error nothing is
// renamed: a file already at a path stays as it was. Errors: a bad Config; an *UnwritableError;
// the ledger's and the files' errors, wrapped.
func Run(ctx context.Context, l *ledger.Ledger, cfg Config) (Result, error) {
	if _, err := ParseFormat(string(cfg.Format)); err != nil {
		return Result{}, err
	}
	if cfg.Path == "" {
		return Result{}, fmt.Errorf("export %s: no output path", cfg.Format)
	}
	var s sink
	var err error
	switch cfg.Format {
	case Nginx:
		s, err = newNginx(cfg.Path)
	case Apache:
		s, err = newApache(cfg.Path)
	case N2TDump:
		s, err = newBinder(cfg.Path)
	case JSONL:
		s, err = newJSONL(cfg.Path)
	}
	if err != nil {
		return Result{}, err
	}
	done := false
	defer func() {
		if !done {
			s.abort()
		}
	}()
	res := Result{}
	if res.Watermark, err = Mark(ctx, l); err != nil {
		return Result{}, err
	}
	var forwards []Forward
	if cfg.Format == Nginx || cfg.Format == Apache {
		if forwards, err = readForwards(ctx, l); err != nil {
			return Result{}, err
		}
	}
	if res.ARKs, err = streamARKs(ctx, l, cfg.Since, func(r *ledger.ARKRow) error {
		return s.ark(r)
	}, cfg.Progress); err != nil {
		return Result{}, err
	}
	if res.Files, err = s.commit(forwards, res.Watermark); err != nil {
		return Result{}, err
	}
	done = true
	res.Forwards = len(forwards)
	return res, nil
}

// arkSelect reads the columns of ledger.ARKRow.
const arkSelect = `select 'ark:' || a.ark, a.naan, coalesce(s.shoulder, ''), a.url, a.erc_who, a.erc_what, a.erc_when,
		a.commitment, ark_status_text(a.status), a.tombstone_reason, a.created_at, a.updated_at, a.metadata::text
	from ark a
	left join shoulder s on s.id = a.shoulder_id`

// sinceWhere selects the ARKs inserted after watermark ($1, $2) or changed after it.
const sinceWhere = ` where a.seq > $1 or a.ark in (select c.ark from ark_change c where c.mark > $2)`

// streamARKs runs the ARK query and hands each row to fn as it arrives (pgx reads the result
// from the connection row by row), calling progress every 10,000 rows.
func streamARKs(ctx context.Context, l *ledger.Ledger, since *Watermark, fn func(*ledger.ARKRow) error,
	progress func(int64)) (int64, error) {
	q, args := arkSelect, []any(nil)
	if since != nil {
		q, args = arkSelect+sinceWhere, []any{since.ARK, since.Change}
	}
	rows, err := l.Pool.Query(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("export: read ARKs: %w", err)
	}
	defer rows.Close()
	var n int64
	var r ledger.ARKRow
	for rows.Next() {
		r = ledger.ARKRow{}
		if err := rows.Scan(&r.ARK, &r.NAAN, &r.Shoulder, &r.Target, &r.Who, &r.What, &r.When,
			&r.Commitment, &r.Status, &r.TombstoneReason, &r.CreatedAt, &r.UpdatedAt, &r.Metadata); err != nil {
			return n, fmt.Errorf("export: read ARK row %d: %w", n+1, err)
		}
		if err := fn(&r); err != nil {
			return n, err
		}
		if n++; progress != nil && n%10000 == 0 {
			progress(n)
		}
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("export: read ARKs: %w", err)
	}
	return n, nil
}

// readForwards reads the forwarding rules: shoulders with a redirect, the longest prefix first,
// then the NAANs that are not authoritative and have a redirect.
func readForwards(ctx context.Context, l *ledger.Ledger) ([]Forward, error) {
	rows, err := l.Pool.Query(ctx, `select naan || shoulder, redirect, true from shoulder
			where coalesce(redirect, '') <> ''
		union all
		select naan || '/', redirect, false from naan where not is_authoritative and coalesce(redirect, '') <> ''
		order by 3 desc, 1`)
	if err != nil {
		return nil, fmt.Errorf("export: read forwarding rules: %w", err)
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Forward, error) {
		var f Forward
		err := r.Scan(&f.Prefix, &f.Redirect, &f.Shoulder)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("export: read forwarding rules: %w", err)
	}
	// the longest shoulder first, so that a nested shoulder wins over the one it is under
	sortForwards(fs)
	return fs, nil
}

// sortForwards orders shoulders before NAANs, a longer prefix before a shorter one, then by
// prefix.
func sortForwards(fs []Forward) {
	less := func(a, b Forward) bool {
		if a.Shoulder != b.Shoulder {
			return a.Shoulder
		}
		if len(a.Prefix) != len(b.Prefix) {
			return len(a.Prefix) > len(b.Prefix)
		}
		return a.Prefix < b.Prefix
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && less(fs[j], fs[j-1]); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// key is the ledger key of an ARK row (NAAN/name, without the label).
func key(r *ledger.ARKRow) string { return strings.TrimPrefix(r.ARK, "ark:") }

// resolution is what a resolver does with an ARK: "@410" for a tombstone, "@reserved" for a
// reserved ARK, "@description" for an empty target, else the target.
func resolution(r *ledger.ARKRow) string {
	switch {
	case r.Status == "unavailable":
		return "@410"
	case r.Status == "reserved":
		return "@reserved"
	case r.Target == nil || *r.Target == "":
		return "@description"
	}
	return *r.Target
}

// expandTemplate writes a forward's redirect with its placeholders replaced: pid for ${pid},
// content for ${content}, value for ${value}, dollar for any other "$"; a redirect without
// placeholder gets appendARK appended.
func expandTemplate(tpl, pid, content, value, dollar, appendARK string) string {
	var b strings.Builder
	placeholder := false
	for i := 0; i < len(tpl); i++ {
		if tpl[i] != '$' {
			b.WriteByte(tpl[i])
			continue
		}
		matched := false
		for _, p := range [...][2]string{{"${pid}", pid}, {"${content}", content}, {"${value}", value}} {
			if strings.HasPrefix(tpl[i:], p[0]) {
				b.WriteString(p[1])
				i += len(p[0]) - 1
				matched, placeholder = true, true
				break
			}
		}
		if !matched {
			b.WriteString(dollar)
		}
	}
	if !placeholder {
		b.WriteString(appendARK)
	}
	return b.String()
}
