package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// EZID's API, for ARKs (as EZID's API documentation, version 2, gives it). Bodies are ANVL, text/plain
// in UTF-8 (anvl.go); every answer starts with a status line, "success: ..." or "error: ...":
//
//	POST   /shoulder/ark:/NAAN/shoulder  mint under the shoulder          201 success: ark:/NAAN/name
//	PUT    /id/ark:/NAAN/name            create that name (insert-only)   201 success: ark:/NAAN/name
//	GET    /id/ark:/NAAN/name            its metadata (no credentials)    200 success: ark:/NAAN/name + ANVL
//	POST   /id/ark:/NAAN/name            modify it                        200 success: ark:/NAAN/name
//	DELETE /id/ark:/NAAN/name            refused: arkhe deletes no ARK    400 error: bad request - ...
//
// Errors in EZID's forms: 400 "error: bad request - REASON", 401 "error: unauthorized" (with
// WWW-Authenticate: Basic realm="EZID"), 403 "error: forbidden", 405 "error: method not allowed";
// arkhe adds a reason after " - " where EZID has none, and answers 413 for a body over the
// limit, 429 for a manager's daily quota used up, 500 for a mint that found every drawn name
// taken, 503 when the ledger does not answer. Credentials: HTTP Basic with the client's id as the
// user name and its API key as the password (or the arklet path's Authorization: Bearer <key>).

// EZID's reserved elements and limits.
const (
	// MaxElements is the most elements of one EZID request body; more are a 400 naming the
	// limit.
	MaxElements = 256
	// MaxElementName is the longest element name, in octets.
	MaxElementName = 255
	ezidRealm      = `Basic realm="EZID"`
	ezidByText     = "arkhe api (EZID)"
)

// ezidAnswer is an answer of EZID's API: a status and its status line ("success: ..." or
// "error: ..."), with an ANVL body after it (GET) and headers.
type ezidAnswer struct {
	status int
	line   string
	body   []byte
	header map[string]string
}

func ezidBad(reason string) *ezidAnswer {
	return &ezidAnswer{status: http.StatusBadRequest, line: "error: bad request - " + reason}
}

func ezidUnauthorized(reason string) *ezidAnswer {
	a := &ezidAnswer{status: http.StatusUnauthorized, line: "error: unauthorized",
		header: map[string]string{"WWW-Authenticate": ezidRealm}}
	if reason != "" {
		a.line += " - " + reason
	}
	return a
}

func ezidForbidden(reason string) *ezidAnswer {
	a := &ezidAnswer{status: http.StatusForbidden, line: "error: forbidden"}
	if reason != "" {
		a.line += " - " + reason
	}
	return a
}

// ezidFrom turns an answer of the shared paths (mint, key checks, repoints) into EZID's form,
// status kept: 400 and 422 are "bad request", 401 "unauthorized", 403 "forbidden", 404 "no such
// identifier", 409 "identifier already exists", 5xx "internal server error".
func ezidFrom(a *answer) *ezidAnswer {
	text := a.text
	if a.json != nil {
		if fe, ok := a.json.(map[string][]string); ok {
			var parts []string
			for k, v := range fe {
				parts = append(parts, k+": "+strings.Join(v, " "))
			}
			sort.Strings(parts)
			text = strings.Join(parts, "; ")
		}
	}
	var e *ezidAnswer
	switch a.status {
	case http.StatusUnauthorized:
		e = ezidUnauthorized(text)
	case http.StatusForbidden:
		e = ezidForbidden(text)
	case http.StatusNotFound:
		e = ezidBad("no such identifier")
	case http.StatusConflict:
		e = ezidBad("identifier already exists")
	default:
		if a.status >= 500 {
			e = &ezidAnswer{status: a.status, line: "error: internal server error - " + text}
		} else {
			e = &ezidAnswer{status: a.status, line: "error: bad request - " + text}
		}
	}
	for k, v := range a.header {
		if e.header == nil {
			e.header = map[string]string{}
		}
		if k != "WWW-Authenticate" {
			e.header[k] = v
		}
	}
	return e
}

// writeEZID sends a and counts it: the status line ANVL-encoded as EZID writes it (its value's
// "%", CR and LF escaped), followed by a LF and the body when there is one.
func (s *Server) writeEZID(w http.ResponseWriter, a *ezidAnswer) {
	switch {
	case a.status >= 500:
		s.failed.Add(1)
	case a.status >= 400:
		s.refused.Add(1)
	}
	label, value, _ := strings.Cut(a.line, ":")
	b := appendANVL(nil, strings.TrimSpace(label), strings.TrimSpace(value))
	if len(a.body) > 0 {
		b = append(b, a.body...)
	} else {
		b = b[:len(b)-1]
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(a.status)
	w.Write(b)
}

// ezidPrincipal reads the caller's credentials: HTTP Basic (user name the client's id, password
// its API key, checked as every key is: authenticateKey), else an Authorization header as the
// arklet paths read it. ok is false when none is presented; a refusal is a 401 (a 503 when the
// ledger cannot tell), a client past its rate limit a 429.
func (s *Server) ezidPrincipal(ctx context.Context, r *http.Request) (p principal, ok bool, refusal *ezidAnswer) {
	if user, pass, basic := r.BasicAuth(); basic {
		prefix, secret, err := ledger.ParseKey(pass)
		if err != nil {
			return p, false, ezidUnauthorized("the password is not an arkhe API key")
		}
		p, a := s.authenticateKey(ctx, pass, prefix, secret)
		if a != nil {
			return p, false, ezidRefusedKey(a)
		}
		if p.clientID != user {
			return principal{}, false, ezidUnauthorized(fmt.Sprintf("the API key is not a key of client %q", user))
		}
		if a := s.throttle(p); a != nil {
			return principal{}, false, ezidThrottled(a)
		}
		return p, true, nil
	}
	if r.Header.Get("Authorization") == "" {
		return p, false, nil
	}
	p, a := s.authenticate(ctx, r)
	switch {
	case a != nil && a.throttled:
		return p, false, ezidThrottled(a)
	case a != nil:
		return p, false, ezidRefusedKey(a)
	}
	return p, true, nil
}

// ezidCaller is the caller of a request that needs credentials (a create, a modify, a delete):
// ezidPrincipal's, or a 401 when none is presented.
func (s *Server) ezidCaller(ctx context.Context, r *http.Request) (principal, *ezidAnswer) {
	p, ok, a := s.ezidPrincipal(ctx, r)
	if a == nil && !ok {
		a = ezidUnauthorized("")
	}
	return p, a
}

// ezidRefusedKey answers a refused credential: 401 (EZID's answer to credentials it does not
// accept) with the reason, Retry-After kept for a locked key; a 503 stays.
func ezidRefusedKey(a *answer) *ezidAnswer {
	if a.status >= 500 {
		return ezidFrom(a)
	}
	e := ezidUnauthorized(a.text)
	if v, ok := a.header["Retry-After"]; ok {
		e.header["Retry-After"] = v
	}
	return e
}

// ezidIdentifier reads the identifier after prefix ("/id/" or "/shoulder/") of r's path, as sent
// (%-escapes kept): an ARK in normal form. A DOI or another scheme, a malformed ARK or one not in
// normal form is a 400 naming the rule (arkhe does not rewrite an identifier it is given).
func ezidIdentifier(r *http.Request, prefix string) (ark.ARK, *ezidAnswer) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	if !strings.HasPrefix(strings.ToLower(raw), "ark:") {
		return ark.ARK{}, ezidBad("invalid identifier: arkhe holds ARKs only (ark:/NAAN/name)")
	}
	if len(raw) > 5+ark.MaxKey {
		return ark.ARK{}, ezidBad(fmt.Sprintf("invalid identifier: %d octets; the limit is %d (draft-kunze-ark §2.3, §3.1: a NAAN of 16 and a name of 255 octets)", len(raw), 5+ark.MaxKey))
	}
	a, err := ark.Parse(raw)
	if err != nil {
		return a, ezidBad("invalid identifier: " + err.Error())
	}
	if a.Inflection != "" {
		return a, ezidBad("invalid identifier: an inflection is not part of an identifier")
	}
	want := "ark:/" + a.Key()
	if raw != want && raw != a.String() {
		return a, ezidBad(fmt.Sprintf("invalid identifier: %s is not in normal form; its normal form is %s", raw, want))
	}
	return a, nil
}

// ezidOptions refuses a query parameter not in allowed (name → the values taken), as EZID does.
func ezidOptions(r *http.Request, allowed map[string][]string) (map[string]string, *ezidAnswer) {
	out := map[string]string{}
	for k, vs := range r.URL.Query() {
		values, ok := allowed[k]
		if !ok {
			return nil, ezidBad(fmt.Sprintf("unrecognized URL query parameter '%s'", k))
		}
		v := strings.ToLower(vs[len(vs)-1])
		found := false
		for _, a := range values {
			found = found || v == a
		}
		if !found {
			return nil, ezidBad(fmt.Sprintf("invalid value for URL query parameter '%s'", k))
		}
		out[k] = v
	}
	return out, nil
}

// readANVL reads r's body (at most MaxBody octets: more is 413) as ANVL: Content-Type, if given,
// text/plain in UTF-8; at most MaxElements elements with names of MaxElementName octets and
// values of MaxFieldOctets.
func (s *Server) readANVL(w http.ResponseWriter, r *http.Request) ([]anvlElem, *ezidAnswer) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != "text/plain" || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
			return nil, ezidBad("If specified, Content-Type must be text/plain and encoding must be UTF-8")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &ezidAnswer{status: http.StatusRequestEntityTooLarge,
				line: fmt.Sprintf("error: bad request - the request body is over the limit of %d octets", mb.Limit)}
		}
		return nil, ezidBad("the request body could not be read")
	}
	elems, err := parseANVL(body)
	if err != nil {
		return nil, ezidBad("ANVL parse error (" + err.Error() + ")")
	}
	if len(elems) > MaxElements {
		return nil, ezidBad(fmt.Sprintf("%d elements; the limit is %d per request", len(elems), MaxElements))
	}
	for _, e := range elems {
		if len(e.name) > MaxElementName {
			return nil, ezidBad(fmt.Sprintf("line %d: an element name of %d octets; the limit is %d", e.line, len(e.name), MaxElementName))
		}
		if len(e.value) > MaxFieldOctets {
			return nil, ezidBad(fmt.Sprintf("line %d: element %s: %d octets; the limit is %d (an ERC field's 64 KiB)", e.line, e.name, len(e.value), MaxFieldOctets))
		}
	}
	return elems, nil
}

// ezidFields are the elements of a create or modify request, checked: the target, the status
// (public, reserved or unavailable, with a tombstone's reason), the ERC kernel and the other
// elements (kept in the ARK's metadata under their names). has says which were given.
type ezidFields struct {
	target, status, reason string
	who, what, when        string
	owner                  string // _owner as sent: it must name the ARK's owner (ownership never changes)
	meta                   map[string]string
	has                    map[string]bool // "_target", "_status", "_owner", "erc.who", "erc.what", "erc.when", and meta's names
}

// ownerRefused answers an _owner that does not name owner, the ARK's owner (on a create, the
// client creating it); nil when _owner is absent or names owner.
func (f *ezidFields) ownerRefused(owner string) *ezidAnswer {
	if !f.has["_owner"] || f.owner == owner {
		return nil
	}
	return ezidBad(fmt.Sprintf("ownership change prohibited: _owner %q: the ARK's owner is %s, the client that minted it, and never changes", f.owner, owner))
}

// ezidStatus reads a _status value: "public", "reserved", or "unavailable" with an optional
// "| reason".
func ezidStatus(v string) (status, reason string, ok bool) {
	st, reason, _ := strings.Cut(v, "|")
	st, reason = strings.TrimSpace(st), strings.TrimSpace(reason)
	switch st {
	case "public", "reserved":
		return st, "", reason == ""
	case "unavailable":
		return st, reason, true
	}
	return "", "", false
}

// checkEZID checks the elements of a request: which may be set (EZID's _target, _status,
// _profile, _export, _owner; the ERC kernel erc.who, erc.what, erc.when; any element not
// reserved, kept under its name) and their values. _owner is only kept: the caller checks it
// against the ARK's owner (ownerRefused).
func checkEZID(elems []anvlElem) (ezidFields, *ezidAnswer) {
	f := ezidFields{meta: map[string]string{}, has: map[string]bool{}}
	for _, e := range elems {
		switch {
		case e.name == "_target":
			if e.value != "" {
				if err := ledger.ValidateTarget(e.value); err != nil {
					return f, ezidBad("_target: " + err.Error())
				}
			}
			f.target = e.value
		case e.name == "_status":
			st, reason, ok := ezidStatus(e.value)
			if !ok {
				return f, ezidBad(fmt.Sprintf("_status: %q: want public, reserved or unavailable | reason", e.value))
			}
			f.status, f.reason = st, reason
		case e.name == "_owner":
			f.owner = e.value
		case e.name == "_profile":
			if e.value != "erc" {
				f.meta[e.name] = e.value
			}
		case e.name == "_export":
			if e.value != "yes" && e.value != "no" {
				return f, ezidBad(fmt.Sprintf("_export: %q: want yes or no", e.value))
			}
			if e.value == "no" {
				f.meta[e.name] = e.value
			}
		case strings.HasPrefix(e.name, "_"):
			return f, ezidBad(fmt.Sprintf("element %s may not be set: of EZID's reserved elements a client sets _target, _status, _profile, _export and _owner", e.name))
		case e.name == "erc.who":
			f.who = e.value
		case e.name == "erc.what":
			f.what = e.value
		case e.name == "erc.when":
			f.when = e.value
		case strings.HasPrefix(e.name, "ezid.") || strings.HasPrefix(e.name, "arklet."):
			return f, ezidBad(fmt.Sprintf("element %s may not be set: the names ezid.* and arklet.* hold what an import kept of a legacy system", e.name))
		default:
			f.meta[e.name] = e.value
		}
		f.has[e.name] = true
	}
	return f, nil
}

// metadataJSON returns f's other elements as a JSON object (nil for none).
func (f *ezidFields) metadataJSON() []byte {
	if len(f.meta) == 0 {
		return nil
	}
	b, _ := json.Marshal(f.meta)
	return b
}

// digestText is what a retried create or mint must repeat, beside the NAAN, shoulder and
// target: the name asked for, the status and the elements, in name order.
func (f *ezidFields) digestText(name string) string {
	var b []byte
	b = append(b, "ezid\x00"...)
	b = appendANVL(b, "name", name)
	b = appendANVL(b, "_status", f.status+"|"+f.reason)
	b = appendANVL(b, "erc.who", f.who)
	b = appendANVL(b, "erc.what", f.what)
	b = appendANVL(b, "erc.when", f.when)
	keys := make([]string, 0, len(f.meta))
	for k := range f.meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = appendANVL(b, k, f.meta[k])
	}
	return string(b)
}

// Handles reports whether the API answers path: arklet's paths (Paths) and EZID's /id/... and
// /shoulder/... (a server mounting the API routes these here).
func Handles(path string) bool {
	for _, p := range Paths() {
		if path == p {
			return true
		}
	}
	return strings.HasPrefix(path, "/id/") || strings.HasPrefix(path, "/shoulder/")
}

// serveShoulder is POST /shoulder/ark:/NAAN/shoulder: mint under the shoulder.
func (s *Server) serveShoulder(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.writeEZID(w, &ezidAnswer{status: http.StatusMethodNotAllowed, line: "error: method not allowed",
			header: map[string]string{"Allow": http.MethodPost}})
		return
	}
	s.writeEZID(w, s.ezidCreate(w, r, "/shoulder/"))
}

// serveIdentifier answers /id/ark:/...: GET, PUT (create), POST (modify), DELETE (refused).
func (s *Server) serveIdentifier(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.writeEZID(w, s.ezidGet(r))
	case http.MethodPut:
		s.writeEZID(w, s.ezidCreate(w, r, "/id/"))
	case http.MethodPost:
		s.writeEZID(w, s.ezidModify(w, r))
	case http.MethodDelete:
		s.writeEZID(w, s.ezidDelete(r))
	default:
		s.writeEZID(w, &ezidAnswer{status: http.StatusMethodNotAllowed, line: "error: method not allowed",
			header: map[string]string{"Allow": "GET, PUT, POST, DELETE"}})
	}
}

// ezidCreate mints (prefix "/shoulder/": a name drawn under the shoulder) or creates (prefix
// "/id/": the name given, insert-only) an ARK through ark_mint_one, with the request's elements.
// An Idempotency-Key header is the mint's request ID, as on the arklet path.
func (s *Server) ezidCreate(w http.ResponseWriter, r *http.Request, prefix string) *ezidAnswer {
	ctx := r.Context()
	p, a := s.ezidCaller(ctx, r)
	if a != nil {
		return a
	}
	id, a := ezidIdentifier(r, prefix)
	if a != nil {
		return a
	}
	allowed := map[string][]string{}
	if prefix == "/id/" {
		allowed["update_if_exists"] = []string{"yes", "no"}
	}
	opts, a := ezidOptions(r, allowed)
	if a != nil {
		return a
	}
	if opts["update_if_exists"] == "yes" {
		return ezidBad("update_if_exists=yes: a create in arkhe is insert-only, never an update; modify an ARK with POST /id/...")
	}
	elems, a := s.readANVL(w, r)
	if a != nil {
		return a
	}
	f, a := checkEZID(elems)
	if a != nil {
		return a
	}
	if a := f.ownerRefused(p.clientID); a != nil {
		return a
	}
	switch f.status {
	case "reserved":
		return ezidBad("_status: reserved: arkhe mints public ARKs (a reserved ARK is one an import brings); leave _status out or send public")
	case "unavailable":
		return ezidBad("_status: unavailable: arkhe mints public ARKs; withdraw the ARK after its mint with POST /id/... and _status: unavailable | reason")
	}
	key, a2 := idempotencyKey(r)
	if a2 != nil {
		return ezidFrom(a2)
	}
	m := mintRecord{naan: id.NAAN, url: f.target, who: f.who, what: f.what, when: f.when, metadata: f.metadataJSON()}
	c, a2 := s.conn(ctx, p)
	if a2 != nil {
		return ezidFrom(a2)
	}
	defer s.release(c)
	if prefix == "/shoulder/" {
		if id.Qualifier != "" {
			return ezidBad("no such shoulder: a shoulder has no qualifier")
		}
		m.shoulder = "/" + id.Name
	} else {
		if id.Qualifier != "" {
			return ezidBad("invalid identifier: a qualifier (/component, .variant) is never minted; create the base name")
		}
		sh, found, err := longestShoulder(ctx, c, id)
		if err != nil {
			return ezidFrom(s.unavailable("read shoulder", err))
		}
		if !found {
			return ezidForbidden(fmt.Sprintf("no registered shoulder of NAAN %s begins %s, so no client reaches it", id.NAAN, id.Name))
		}
		m.shoulder, m.name = sh, id.Name
	}
	m.metadataForDigestRaw = f.digestText(m.name)
	printed, replayed, a2 := s.mint(ctx, c, p, m, key)
	if a2 != nil {
		if prefix == "/shoulder/" && a2.status == http.StatusForbidden && strings.Contains(a2.text, "is not registered") {
			return ezidBad("no such shoulder: " + a2.text)
		}
		return ezidFrom(a2)
	}
	e := &ezidAnswer{status: http.StatusCreated, line: "success: " + printed}
	if replayed {
		e.header = map[string]string{"Idempotent-Replayed": "true"}
	}
	return e
}

// longestShoulder returns the longest registered shoulder (stored form "/x9") of a's NAAN that
// begins a's name.
func longestShoulder(ctx context.Context, q ledger.Querier, a ark.ARK) (string, bool, error) {
	var sh string
	err := q.QueryRow(ctx, `select shoulder from shoulder where naan = $1 and starts_with($2, shoulder)
		order by length(shoulder) desc limit 1`, a.NAAN, "/"+a.Name).Scan(&sh)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return sh, err == nil, err
}

// ezidRecord is what EZID's GET shows of an ARK.
type ezidRecord struct {
	target, status, reason string
	who, what, when        string
	meta                   [][2]string // the other elements, in name order
	created, updated       *time.Time
	owner                  string
}

// readEZID reads the ARK with ledger key key; found is false when the ledger does not hold it.
func readEZID(ctx context.Context, q ledger.Querier, key string) (rec ezidRecord, found bool, err error) {
	var meta []byte
	err = q.QueryRow(ctx, `select coalesce(a.url, ''), ark_status_text(a.status), coalesce(a.tombstone_reason, ''),
		coalesce(a.erc_who, ''), coalesce(a.erc_what, ''), coalesce(a.erc_when, ''), a.metadata, a.created_at, a.updated_at,
		coalesce(c.client_id, m.name, '')
		from ark a left join client c on c.id = a.created_by left join shoulder s on s.id = a.shoulder_id
		left join manager m on m.id = s.manager_id
		where a.ark = $1`, key).Scan(&rec.target, &rec.status, &rec.reason, &rec.who, &rec.what, &rec.when, &meta,
		&rec.created, &rec.updated, &rec.owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if len(meta) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(meta, &obj); err != nil {
			return rec, false, fmt.Errorf("metadata of ark:%s: %w", key, err)
		}
		for k, raw := range obj {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				v = string(raw) // a number, a list: as JSON
			}
			rec.meta = append(rec.meta, [2]string{k, v})
		}
		sort.Slice(rec.meta, func(i, j int) bool { return rec.meta[i][0] < rec.meta[j][0] })
	}
	return rec, true, nil
}

// metaValue returns the value of the other element name, and whether the ARK has it.
func (rec *ezidRecord) metaValue(name string) (string, bool) {
	for _, kv := range rec.meta {
		if kv[0] == name {
			return kv[1], true
		}
	}
	return "", false
}

// statusText is the _status value: "public", "reserved", or "unavailable | reason".
func (rec *ezidRecord) statusText() string {
	if rec.status == "unavailable" && rec.reason != "" {
		return "unavailable | " + rec.reason
	}
	return rec.status
}

// anvl writes rec as EZID's GET does: _target, _status, _created and _updated (Unix seconds),
// _owner, _profile, _export, the ERC kernel, then the other elements in name order.
func (rec *ezidRecord) anvl() []byte {
	var b []byte
	b = appendANVL(b, "_target", rec.target)
	b = appendANVL(b, "_status", rec.statusText())
	if rec.created != nil {
		b = appendANVL(b, "_created", strconv.FormatInt(rec.created.Unix(), 10))
	}
	switch {
	case rec.updated != nil:
		b = appendANVL(b, "_updated", strconv.FormatInt(rec.updated.Unix(), 10))
	case rec.created != nil:
		b = appendANVL(b, "_updated", strconv.FormatInt(rec.created.Unix(), 10))
	}
	if rec.owner != "" {
		b = appendANVL(b, "_owner", rec.owner)
	}
	profile, ok := rec.metaValue("_profile")
	if !ok {
		profile = "erc"
	}
	b = appendANVL(b, "_profile", profile)
	export, ok := rec.metaValue("_export")
	if !ok {
		export = "yes"
	}
	b = appendANVL(b, "_export", export)
	for _, e := range [][2]string{{"erc.who", rec.who}, {"erc.what", rec.what}, {"erc.when", rec.when}} {
		if e[1] != "" {
			b = appendANVL(b, e[0], e[1])
		}
	}
	for _, kv := range rec.meta {
		if kv[0] != "_profile" && kv[0] != "_export" {
			b = appendANVL(b, kv[0], kv[1])
		}
	}
	return b
}

// ezidGet is GET /id/ark:/...: the ARK's metadata, to anyone; a reserved ARK (never published)
// only to a caller with credentials, as EZID shows a reserved identifier to its owner.
func (s *Server) ezidGet(r *http.Request) *ezidAnswer {
	ctx := r.Context()
	_, ok, a := s.ezidPrincipal(ctx, r)
	if a != nil {
		return a
	}
	if _, a := ezidOptions(r, map[string][]string{"prefix_match": {"no"}}); a != nil {
		return a
	}
	id, a := ezidIdentifier(r, "/id/")
	if a != nil {
		return a
	}
	rec, found, err := readEZID(ctx, s.pool, id.Key())
	if err != nil {
		return ezidFrom(s.unavailable("read ARK", err))
	}
	if !found {
		return ezidBad("no such identifier")
	}
	if rec.status == "reserved" && !ok {
		return ezidUnauthorized("a reserved identifier is shown to a client with credentials only")
	}
	return &ezidAnswer{status: http.StatusOK, line: "success: ark:/" + id.Key(), body: rec.anvl()}
}

// ezidModify is POST /id/ark:/...: a new _target through the repoint path (ark_repoint: one
// ARK_CHANGE row naming the client) and _status: unavailable | reason through the tombstone path
// (ark_tombstone), in one transaction; elements the request repeats with the ARK's own values
// change nothing. What the online API does not change (the ERC kernel and the other elements,
// a status back from unavailable, reserved again) is a 400 naming the rule, with nothing written.
func (s *Server) ezidModify(w http.ResponseWriter, r *http.Request) *ezidAnswer {
	ctx := r.Context()
	p, a := s.ezidCaller(ctx, r)
	if a != nil {
		return a
	}
	if _, a := ezidOptions(r, map[string][]string{}); a != nil {
		return a
	}
	id, a := ezidIdentifier(r, "/id/")
	if a != nil {
		return a
	}
	elems, a := s.readANVL(w, r)
	if a != nil {
		return a
	}
	f, a := checkEZID(elems)
	if a != nil {
		return a
	}
	c, a2 := s.conn(ctx, p)
	if a2 != nil {
		return ezidFrom(a2)
	}
	defer s.release(c)
	tx, err := c.Begin(ctx)
	if err != nil {
		return ezidFrom(s.unavailable("modify", err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// the key's check and the writes are one transaction: its row is held until the commit, so
	// a revocation meanwhile waits (or committed first, and the key is refused)
	if p.key != nil {
		if err := ledger.HoldKey(ctx, tx, p.key.Prefix); err != nil {
			return ezidRefusedKey(s.keyRefusal(err))
		}
	}
	rec, found, err := readEZID(ctx, tx, id.Key())
	if err != nil {
		return ezidFrom(s.unavailable("read ARK", err))
	}
	if !found {
		return ezidBad("no such identifier")
	}
	if a := f.ownerRefused(rec.owner); a != nil {
		return a
	}
	// what the online API does not change must be the ARK's own
	for _, e := range [][3]string{{"erc.who", f.who, rec.who}, {"erc.what", f.what, rec.what}, {"erc.when", f.when, rec.when}} {
		if f.has[e[0]] && e[1] != e[2] {
			return ezidBad(e[0] + ": the ERC description is changed with arkhe update, not online; send the ARK's own value or leave it out")
		}
	}
	for k, v := range f.meta {
		if cur, _ := rec.metaValue(k); cur != v {
			return ezidBad(k + ": metadata is changed with arkhe update, not online; send the ARK's own value or leave it out")
		}
	}
	tombstone, repointed := false, false
	if f.has["_status"] {
		switch {
		case f.status == rec.status && (f.status != "unavailable" || f.reason == "" || f.reason == rec.reason):
		case f.status == "reserved":
			return ezidBad(fmt.Sprintf("_status: ARK ark:/%s is %s; it never returns to reserved (a published name cannot be unpublished)", id.Key(), rec.status))
		case f.status == "unavailable" && rec.status == "unavailable":
			return ezidBad("_status: the ARK is withdrawn already with its reason (" + rec.reason + "); a tombstone's reason is changed with arkhe update")
		case f.status == "unavailable":
			if f.reason == "" {
				return ezidBad("_status: a tombstone needs a reason: _status: unavailable | reason")
			}
			tombstone = true
		default:
			return ezidBad(fmt.Sprintf("_status: public: the ARK is %s; a tombstone is lifted or a reserved ARK published with arkhe update, not online", rec.status))
		}
	}
	if f.has["_target"] && f.target != rec.target {
		if f.target == "" {
			return ezidBad("_target: an ARK's target is emptied with arkhe update, not online")
		}
		if repointed, err = ledger.RepointARKOn(ctx, tx, id.Key(), f.target, p.clientID, ezidByText); err != nil {
			return ezidFrom(s.updateRefusal(err))
		}
	}
	if tombstone {
		if _, err := ledger.TombstoneARKOn(ctx, tx, id.Key(), f.reason, p.clientID, ezidByText); err != nil {
			return ezidFrom(s.updateRefusal(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return ezidFrom(s.unavailable("modify: commit", err))
	}
	if repointed {
		s.updated.Add(1)
	}
	return &ezidAnswer{status: http.StatusOK, line: "success: ark:/" + id.Key()}
}

// ezidDelete is DELETE /id/ark:/...: refused, in EZID's form (EZID deletes a reserved
// identifier; arkhe deletes no ARK, whatever its status).
func (s *Server) ezidDelete(r *http.Request) *ezidAnswer {
	ctx := r.Context()
	if _, a := s.ezidCaller(ctx, r); a != nil {
		return a
	}
	if _, a := ezidIdentifier(r, "/id/"); a != nil {
		return a
	}
	return ezidBad("identifier status does not support deletion: arkhe never deletes an ARK (a name once minted stays bound for ever); withdraw it with POST /id/... and _status: unavailable | reason")
}
