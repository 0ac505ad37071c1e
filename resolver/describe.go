package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
)

// Unavailable is how a description writes a value the ledger does not hold (the ERC convention
// for a value unavailable for any reason).
const Unavailable = "(:unav)"

// Field is one element of a description: an ANVL name and its value.
type Field struct {
	Name, Value string
}

// Description is the ERC description of an ARK, a shoulder or a NAAN: the kernel (who, what,
// when, where) first, then what the ledger holds beside it, in that order; a missing value is
// Unavailable.
type Description struct {
	// Kind is "ark", "shoulder" or "naan".
	Kind   string
	Fields []Field
}

// Get returns the value of the field called name, "" when there is none.
func (d *Description) Get(name string) string {
	for _, f := range d.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// val is s, or Unavailable when s is blank.
func val(s string) string {
	if strings.TrimSpace(s) == "" {
		return Unavailable
	}
	return s
}

// valPtr is val(*p), Unavailable for nil.
func valPtr(p *string) string {
	if p == nil {
		return Unavailable
	}
	return val(*p)
}

func timeVal(t *time.Time) string {
	if t == nil {
		return Unavailable
	}
	return t.UTC().Format(time.RFC3339)
}

// arkDescription is an ARK's: who, what, when, where (the ARK), its commitment and its NAAN's
// policy, its status and target, and for a tombstone the reason and the time.
func arkDescription(row arkRow) *Description {
	d := &Description{Kind: "ark", Fields: []Field{
		{"who", val(row.who)}, {"what", val(row.what)}, {"when", val(row.when)}, {"where", "ark:" + row.key},
		{"commitment", val(row.cmt)}, {"policy", val(row.policy)}, {"status", row.status},
		{"target", val(row.target)},
	}}
	if row.status == "unavailable" {
		d.Fields = append(d.Fields, Field{"tombstone_reason", val(row.reason)}, Field{"tombstoned_at", timeVal(row.tombstonedAt)})
	}
	return d
}

const shoulderQuery = `select s.id, coalesce(m.name, ''), s.status, s.created_at, coalesce(s.redirect, '')
	from shoulder s left join manager m on m.id = s.manager_id
	where s.naan = $1 and s.shoulder = $2`

// shoulderCount is a query of its own: Citus plans no correlated subquery over the ARKs.
const shoulderCount = `select count(*) from ark where shoulder_id = $1`

// describeShoulder is the description of the shoulder ark:NAAN/name when the ledger has it: who
// holds it (its manager), its status, when it was registered, and how many ARKs it holds.
func (r *Resolver) describeShoulder(ctx context.Context, a ark.ARK) (*Description, bool, error) {
	var who, status, redirect string
	var created time.Time
	var id, n int64
	err := r.pool.QueryRow(ctx, shoulderQuery, a.NAAN, "/"+a.Name).Scan(&id, &who, &status, &created, &redirect)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err == nil {
		err = r.pool.QueryRow(ctx, shoulderCount, id).Scan(&n)
	}
	if err != nil {
		return nil, false, fmt.Errorf("resolver: look up shoulder %s: %w", a, err)
	}
	return &Description{Kind: "shoulder", Fields: []Field{
		{"who", val(who)}, {"what", "shoulder " + a.String()}, {"when", timeVal(&created)}, {"where", a.String()},
		{"status", status}, {"arks", strconv.FormatInt(n, 10)}, {"redirect", val(redirect)},
	}}, true, nil
}

const naanDescQuery = `select name, who, erc_where, na_policy, is_authoritative, coalesce(redirect, ''), registered_at
	from naan where naan = $1`

// resolveNAAN answers a request for a NAAN alone: its description (who, what, when, where, its
// policy, whether the ledger is authoritative for it, its redirect); without an inflection, a
// NAAN that is not authoritative and has a redirect forwards.
func (r *Resolver) resolveNAAN(ctx context.Context, naan string, req request) Answer {
	var name, who, where, policy *string
	var auth bool
	var redirect string
	var registered *time.Time
	err := r.pool.QueryRow(ctx, naanDescQuery, naan).Scan(&name, &who, &where, &policy, &auth, &redirect, &registered)
	if errors.Is(err, pgx.ErrNoRows) {
		return r.forwardUnknown(naan, "", req)
	}
	if err != nil {
		return r.unavailable(err)
	}
	if !req.inflection && !auth && redirect != "" {
		return forward(redirect, naan, "", req)
	}
	if where == nil || *where == "" {
		s := "ark:" + naan
		where = &s
	}
	return Answer{Outcome: OutcomeDescription, Status: 200, Description: &Description{Kind: "naan", Fields: []Field{
		{"who", valPtr(who)}, {"what", "NAAN " + naan + " " + strings.TrimSpace(valPtr(name))}, {"when", timeVal(registered)},
		{"where", *where}, {"policy", valPtr(policy)}, {"authoritative", strconv.FormatBool(auth)}, {"redirect", val(redirect)},
	}}}
}

// WriteANVL writes d as ANVL (text/plain): the line "erc:", then "name: value" lines; a value's
// line breaks become continuation lines (indented), a carriage return is dropped.
func (d *Description) WriteANVL(b *strings.Builder) {
	b.WriteString("erc:\n")
	for _, f := range d.Fields {
		b.WriteString(f.Name)
		b.WriteString(": ")
		v := strings.ReplaceAll(f.Value, "\r", "")
		b.WriteString(strings.ReplaceAll(v, "\n", "\n    "))
		b.WriteByte('\n')
	}
}

// MarshalJSON writes d as one JSON object: "kind" and then every field by name.
func (d *Description) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"kind":`)
	k, _ := json.Marshal(d.Kind)
	b.Write(k)
	for _, f := range d.Fields {
		n, _ := json.Marshal(f.Name)
		v, _ := json.Marshal(f.Value)
		b.WriteByte(',')
		b.Write(n)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString("}")
	return []byte(b.String()), nil
}

// WriteHTML writes d as a small HTML page (a definition list), every value escaped.
func (d *Description) WriteHTML(b *strings.Builder, title string) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n<dl>\n",
		html.EscapeString(title), html.EscapeString(title))
	for _, f := range d.Fields {
		fmt.Fprintf(b, "<dt>%s</dt><dd>%s</dd>\n", html.EscapeString(f.Name), html.EscapeString(f.Value))
	}
	b.WriteString("</dl>\n</body></html>\n")
}
