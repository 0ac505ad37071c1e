package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/loader"
)

// arklet's API. Requests and answers as arklet has them (src/arklet/ark/views.py):
//
//	POST /mint   {"naan": 12345, "shoulder": "/x9", "url": ..., "metadata": ..., "commitment": ...}
//	             200 {"ark": "ark:/12345/x9..."}
//	PUT /update  {"ark": "ark:/12345/x9...", "url": ..., "metadata": ..., "commitment": ...}
//	             200, empty
//
// 405 for another method; 403 for a missing, unknown, malformed or revoked key or a NAAN or
// shoulder out of the client's reach; 400 for a body that is not JSON, or a form error as
// {"field": ["message"]}; 404 for an ARK not in the ledger; 500 "Gave up creating ark after N
// collision(s)". arkhe adds: 401 for a locked key, 413 for a body over the limit, 422 for an
// Idempotency-Key used with another payload, 429 for a manager's daily quota used up, 503 when
// the ledger does not answer. The bulk forms take {"naan": ..., "records": [...]} (mint) and
// {"records": [...]} (update).

// answer is an HTTP answer: a status with a JSON value, or a text.
type answer struct {
	status    int
	json      any
	text      string
	header    map[string]string
	throttled bool // a 429 of the per-client rate limit (throttle)
}

func forbidden(text string) *answer { return &answer{status: http.StatusForbidden, text: text} }

// formError is arklet's 400 for a form that does not validate: {"field": ["message"]}.
func formError(field, msg string) *answer {
	return &answer{status: http.StatusBadRequest, json: map[string][]string{field: {msg}}}
}

// unavailable is a 503 for an error of the ledger's, passed to OnError.
func (s *Server) unavailable(op string, err error) *answer {
	if s.cfg.OnError != nil {
		s.cfg.OnError(&LedgerError{Op: op, Err: err})
	}
	return &answer{status: http.StatusServiceUnavailable, text: "the ledger did not answer; try again"}
}

// write sends a and counts it.
func (s *Server) write(w http.ResponseWriter, a *answer) {
	switch {
	case a.status >= 500:
		s.failed.Add(1)
	case a.status >= 400:
		s.refused.Add(1)
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	switch {
	case a.json != nil:
		b, err := json.Marshal(a.json)
		if err != nil {
			b = []byte(`{}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		w.Write(b)
	case a.text != "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(a.status)
		io.WriteString(w, a.text+"\n")
	default:
		w.WriteHeader(a.status)
	}
}

// only answers 405 unless r's method is method.
func (s *Server) only(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	s.write(w, &answer{status: http.StatusMethodNotAllowed})
	return false
}

// readObject reads r's body (at most MaxBody octets: more is 413) as one JSON object of raw
// fields; anything else is a 400, as arklet answers a body json.loads refuses.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, *answer) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &answer{status: http.StatusRequestEntityTooLarge,
				text: fmt.Sprintf("the request body is over the limit of %d octets", mb.Limit)}
		}
		return nil, &answer{status: http.StatusBadRequest, text: "the request body could not be read"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, &answer{status: http.StatusBadRequest, text: "the request body is not a JSON object"}
	}
	return obj, nil
}

// mintRecord is one ARK to mint, validated.
type mintRecord struct {
	naan, shoulder       string // shoulder in stored form "/x9"
	url, commitment      string
	who, what, when      string // the ERC kernel ("" for none; arklet sends none)
	metadata             []byte // a JSON object, nil for none
	metadataForDigestRaw string
	name                 string // the assigned name to create (EZID's PUT /id/...); "" to draw one
}

// updateRecord is one ARK to change, validated.
type updateRecord struct {
	a                    ark.ARK
	url                  string
	hasURL               bool
	commitment, metadata *string
}

// field reads an optional string field of obj: absent or null is "", false; a JSON number is
// its text (arklet's forms take "12345" and 12345 alike); another type is a form error.
func field(obj map[string]json.RawMessage, name string) (string, bool, *answer) {
	raw, ok := obj[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), true, nil
	}
	return "", false, formError(name, "Enter a valid value.")
}

// limit refuses a value over max octets with a 400 naming the limit.
func limit(name, v string, max int, what string) *answer {
	if len(v) > max {
		return formError(name, fmt.Sprintf("%d octets; the limit is %d (%s)", len(v), max, what))
	}
	return nil
}

// parseURL checks an optional target: http or https, absolute, at most 2048 octets.
func parseURL(obj map[string]json.RawMessage) (string, bool, *answer) {
	u, ok, a := field(obj, "url")
	if a != nil || !ok || u == "" {
		return "", ok, a
	}
	if a := limit("url", u, 2048, "a target URL is stored in 2048 octets"); a != nil {
		return "", false, a
	}
	if err := ledger.ValidateTarget(u); err != nil {
		return "", false, formError("url", "Enter a valid URL.")
	}
	return u, true, nil
}

// parseMint validates one mint record (naan from the record, else naan).
func parseMint(obj map[string]json.RawMessage, naan string) (mintRecord, *answer) {
	var m mintRecord
	n, ok, a := field(obj, "naan")
	if a != nil {
		return m, a
	}
	if !ok {
		n = naan
	}
	if n == "" {
		return m, formError("naan", "This field is required.")
	}
	if a := limit("naan", n, ark.MaxNAAN, "draft-kunze-ark §2.3: a NAAN of 16 octets"); a != nil {
		return m, a
	}
	if strings.Trim(n, "0123456789") != "" {
		return m, formError("naan", "Enter a whole number.")
	}
	m.naan = n
	sh, ok, a := field(obj, "shoulder")
	switch {
	case a != nil:
		return m, a
	case !ok || sh == "":
		return m, formError("shoulder", "This field is required.")
	case !strings.HasPrefix(sh, "/"):
		return m, formError("shoulder", "Shoulders must start with a forward slash")
	}
	if a := limit("shoulder", sh, ark.MaxName, "draft-kunze-ark §3.1: a name of 255 octets"); a != nil {
		return m, a
	}
	m.shoulder = sh
	if m.url, _, a = parseURL(obj); a != nil {
		return m, a
	}
	if m.commitment, _, a = field(obj, "commitment"); a != nil {
		return m, a
	}
	if a := limit("commitment", m.commitment, MaxFieldOctets, "an ERC field's 64 KiB"); a != nil {
		return m, a
	}
	md, ok, a := field(obj, "metadata")
	if a != nil {
		return m, a
	}
	if a := limit("metadata", md, MaxFieldOctets, "an ERC field's 64 KiB"); a != nil {
		return m, a
	}
	if ok && md != "" {
		// arklet's metadata is free text: kept under its name, as an import of arklet keeps it
		m.metadata, _ = json.Marshal(map[string]string{legacy.MetaArkletMetadata: md})
		m.metadataForDigestRaw = md
	}
	return m, nil
}

// parseUpdate validates one update record.
func parseUpdate(obj map[string]json.RawMessage) (updateRecord, *answer) {
	var u updateRecord
	s, ok, a := field(obj, "ark")
	switch {
	case a != nil:
		return u, a
	case !ok || s == "":
		return u, formError("ark", "This field is required.")
	}
	if a := limit("ark", s, 5+ark.MaxKey, "draft-kunze-ark §2.3, §3.1: a NAAN of 16 and a name of 255 octets"); a != nil {
		return u, a
	}
	parsed, err := ark.Parse(s)
	if err != nil {
		var le *ark.LimitError
		if errors.As(err, &le) {
			return u, formError("ark", le.Error())
		}
		return u, formError("ark", "Invalid ARK: "+err.Error())
	}
	u.a = parsed
	if u.url, u.hasURL, a = parseURL(obj); a != nil {
		return u, a
	}
	for _, f := range []struct {
		name string
		dst  **string
	}{{"commitment", &u.commitment}, {"metadata", &u.metadata}} {
		v, ok, a := field(obj, f.name)
		if a != nil {
			return u, a
		}
		if a := limit(f.name, v, MaxFieldOctets, "an ERC field's 64 KiB"); a != nil {
			return u, a
		}
		if ok {
			*f.dst = &v
		}
	}
	return u, nil
}

// idempotencyKey reads the Idempotency-Key header: "" for none; printable ASCII up to
// MaxIdempotencyKey octets, else a 400 naming the limit.
func idempotencyKey(r *http.Request) (string, *answer) {
	k := r.Header.Get("Idempotency-Key")
	if len(k) > MaxIdempotencyKey {
		return "", &answer{status: http.StatusBadRequest,
			text: fmt.Sprintf("Idempotency-Key: %d octets; the limit is %d", len(k), MaxIdempotencyKey)}
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return "", &answer{status: http.StatusBadRequest, text: "Idempotency-Key: printable ASCII without spaces only"}
		}
	}
	return k, nil
}

// digest is a mint record's payload digest: what a retry with the same request ID must repeat.
func (m *mintRecord) digest() [16]byte {
	h := sha256.New()
	for _, f := range []string{m.naan, m.shoulder, m.url, m.commitment, m.metadataForDigestRaw} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	var d [16]byte
	copy(d[:], h.Sum(nil))
	return d
}

// mint mints m for p on c with request ID requestID; "" (no Idempotency-Key) takes a request ID
// of the server's own, "api:" and 32 random hex digits, so every ARK has its receipt (as every
// ARK arkhe mints does) and a retry without the header mints again, as in arklet. It returns
// the ARK (arklet's printed form "ark:/NAAN/name") and whether a receipt answered.
func (s *Server) mint(ctx context.Context, c ledger.Querier, p principal, m mintRecord, requestID string) (string, bool, *answer) {
	if requestID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", false, s.unavailable("draw a request ID", err)
		}
		requestID = "api:" + hex.EncodeToString(b[:])
	}
	sh, found, err := s.shoulder(ctx, c, m.naan, m.shoulder)
	if err != nil {
		return "", false, s.unavailable("read shoulder", err)
	}
	if !found {
		return "", false, forbidden(fmt.Sprintf("shoulder %s of NAAN %s is not registered: no client reaches it", m.shoulder, m.naan))
	}
	req := ledger.MintOneRequest{ClientID: p.clientID, KeyPrefix: p.prefix(), RequestID: requestID, Digest: m.digest(),
		ShoulderID: sh.ID, URL: m.url, Commitment: m.commitment, Who: m.who, What: m.what, When: m.when, Metadata: m.metadata}
	if m.name != "" {
		// one given name, insert-only: held already, it is refused, never updated
		req.Names = []string{m.name}
		res, err := ledger.MintOne(ctx, c, req)
		var mr *ledger.MintRefusedError
		if ledger.IsUniqueViolation(err) || errors.As(err, &mr) && mr.Code == ledger.CodeNamesTaken {
			return "", false, &answer{status: http.StatusConflict, text: "identifier already exists"}
		}
		if err != nil {
			return "", false, s.mintRefusal(ctx, c, p, err)
		}
		if res.Replayed {
			s.replayed.Add(1)
		} else {
			s.minted.Add(1)
		}
		return "ark:/" + res.Key, res.Replayed, nil
	}
	for attempt := 0; ; attempt++ {
		d, err := loader.NewNameDrawer(sh, s.cfg.Blades())
		if err != nil {
			return "", false, forbidden(fmt.Sprintf("shoulder %s of NAAN %s cannot mint: %v", m.shoulder, m.naan, err))
		}
		req.Names = req.Names[:0]
		for i := 0; i < s.cfg.MaxDraws; i++ {
			n, err := d.Next()
			if err != nil {
				return "", false, s.unavailable("draw a name", err)
			}
			req.Names = append(req.Names, n)
		}
		res, err := ledger.MintOne(ctx, c, req)
		if ledger.IsUniqueViolation(err) && attempt < 3 {
			continue // a name a concurrent mint took between the look-up and the insert (Citus)
		}
		if err != nil {
			return "", false, s.mintRefusal(ctx, c, p, err)
		}
		if res.Replayed {
			s.replayed.Add(1)
		} else {
			s.minted.Add(1)
		}
		return "ark:/" + res.Key, res.Replayed, nil
	}
}

// mintRefusal answers a refused mint by the ledger's SQLSTATE.
func (s *Server) mintRefusal(ctx context.Context, c ledger.Querier, p principal, err error) *answer {
	var mr *ledger.MintRefusedError
	if !errors.As(err, &mr) {
		return s.unavailable("mint", err)
	}
	switch mr.Code {
	case ledger.CodeKeyRefused:
		// revoked or locked since the key was proved: which, the ledger says
		kerr := ledger.KeyUsable(ctx, c, p.prefix())
		if kerr == nil {
			kerr = &ledger.KeyError{ClientID: p.clientID, Prefix: p.prefix(), Reason: "unknown"}
		}
		return s.keyRefusal(kerr)
	case ledger.CodeNamesTaken:
		// every candidate name was taken: each one a collision, as arklet counts them
		return &answer{status: http.StatusInternalServerError, text: "Gave up creating ark after " + strconv.Itoa(s.cfg.MaxDraws) + " collision(s)"}
	case ledger.CodeQuotaUsed:
		now := time.Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		return &answer{status: http.StatusTooManyRequests, text: mr.Rule, header: map[string]string{"Retry-After": retryAfter(midnight)}}
	case ledger.CodeRequestReused:
		return &answer{status: http.StatusUnprocessableEntity, text: "Idempotency-Key: " + mr.Rule}
	}
	return forbidden(mr.Rule)
}

// retryAfter is the Retry-After value (seconds, at least 1) until t.
func retryAfter(t time.Time) string {
	return strconv.Itoa(max(1, int(time.Until(t).Seconds()+0.999)))
}

// serveMint is POST /mint.
func (s *Server) serveMint(w http.ResponseWriter, r *http.Request) {
	if !s.only(w, r, http.MethodPost) {
		return
	}
	ctx := r.Context()
	p, a := s.authenticate(ctx, r)
	if a != nil {
		s.write(w, a)
		return
	}
	obj, a := s.readObject(w, r)
	if a != nil {
		s.write(w, a)
		return
	}
	m, a := parseMint(obj, "")
	if a != nil {
		s.write(w, a)
		return
	}
	key, a := idempotencyKey(r)
	if a != nil {
		s.write(w, a)
		return
	}
	// minted with the principal's other single mints waiting meanwhile, in one transaction
	printed, replayed, a := s.mintGrouped(ctx, p, m, key)
	if a != nil {
		s.write(w, a)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	s.write(w, &answer{status: http.StatusOK, json: map[string]string{"ark": printed}})
}

// update applies u for p on c (a transaction holding p's key: updateHeld): a new target through
// the repoint path (one ARK_CHANGE row naming the client). A commitment or metadata given must
// equal the ARK's: the API changes targets only.
func (s *Server) update(ctx context.Context, c ledger.Querier, p principal, u updateRecord) (bool, *answer) {
	if u.commitment != nil || u.metadata != nil {
		rec, err := ledgerShow(ctx, c, u.a.Key())
		if err != nil {
			return false, s.updateRefusal(err)
		}
		if u.commitment != nil && *u.commitment != rec.commitment {
			return false, formError("commitment", "a commitment is changed with arkhe update, not online; send the ARK's own or leave it out")
		}
		if u.metadata != nil && *u.metadata != rec.metadata {
			return false, formError("metadata", "metadata is changed with arkhe update, not online; send the ARK's own or leave it out")
		}
	}
	if !u.hasURL || u.url == "" {
		return false, nil
	}
	changed, err := ledger.RepointARKOn(ctx, c, u.a.Key(), u.url, p.clientID, "arkhe api")
	if err != nil {
		return false, s.updateRefusal(err)
	}
	return changed, nil
}

// updateHeld applies u for p (update) in a transaction of its own on c that first holds the key
// p presented (ledger.HoldKey: registered, active, not locked, its row held until the commit),
// so a key revoked after that check cannot let this write through: the revocation waits for
// the commit, or committed first and the key is refused (403, 401 when locked).
func (s *Server) updateHeld(ctx context.Context, c ledger.Querier, p principal, u updateRecord) (bool, *answer) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return false, s.unavailable("update", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if p.key != nil {
		if err := ledger.HoldKey(ctx, tx, p.key.Prefix); err != nil {
			return false, s.keyRefusal(err)
		}
	}
	changed, a := s.update(ctx, tx, p, u)
	if a != nil {
		return false, a
	}
	if err := tx.Commit(ctx); err != nil {
		return false, s.unavailable("update: commit", err)
	}
	if changed {
		s.updated.Add(1)
	}
	return changed, nil
}

// updateRefusal answers a refused change: 404 for an ARK not in the ledger, 403 for one out of
// the client's reach, 400 for a target the ledger does not take.
func (s *Server) updateRefusal(err error) *answer {
	var ua *ledger.UnknownARKError
	var ar *ledger.ARKRefusedError
	switch {
	case errors.As(err, &ua):
		return &answer{status: http.StatusNotFound, text: ua.Error()}
	case errors.As(err, &ar):
		return forbidden(ar.Error())
	}
	return s.unavailable("update", err)
}

// shown is what update compares of an ARK.
type shown struct{ commitment, metadata string }

// ledgerShow reads the ARK's commitment and arklet metadata ("" when none).
func ledgerShow(ctx context.Context, q ledger.Querier, key string) (shown, error) {
	var sh shown
	err := q.QueryRow(ctx, `select coalesce(commitment, ''), coalesce(metadata->>$2, '') from ark where ark = $1`,
		key, legacy.MetaArkletMetadata).Scan(&sh.commitment, &sh.metadata)
	if errors.Is(err, pgx.ErrNoRows) {
		return sh, &ledger.UnknownARKError{ARK: "ark:" + key}
	}
	return sh, err
}

// serveUpdate is PUT /update.
func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.only(w, r, http.MethodPut) {
		return
	}
	ctx := r.Context()
	p, a := s.authenticate(ctx, r)
	if a != nil {
		s.write(w, a)
		return
	}
	obj, a := s.readObject(w, r)
	if a != nil {
		s.write(w, a)
		return
	}
	u, a := parseUpdate(obj)
	if a != nil {
		s.write(w, a)
		return
	}
	c, a := s.conn(ctx, p)
	if a != nil {
		s.write(w, a)
		return
	}
	defer s.release(c)
	if _, a := s.updateHeld(ctx, c, p, u); a != nil {
		s.write(w, a)
		return
	}
	s.write(w, &answer{status: http.StatusOK})
}

// records reads the bulk body's "records" array (at most MaxRecords, else a 400 naming the
// limit) and its optional "naan".
func (s *Server) records(obj map[string]json.RawMessage) (string, []map[string]json.RawMessage, *answer) {
	naan, _, a := field(obj, "naan")
	if a != nil {
		return "", nil, a
	}
	raw, ok := obj["records"]
	if !ok {
		return "", nil, formError("records", "This field is required.")
	}
	var recs []map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&recs); err != nil {
		return "", nil, formError("records", "a list of JSON objects")
	}
	if len(recs) > s.cfg.MaxRecords {
		return "", nil, formError("records", fmt.Sprintf("%d records; the limit is %d per request", len(recs), s.cfg.MaxRecords))
	}
	return naan, recs, nil
}

// recordAnswer names record i in a refusal of a bulk request.
func recordAnswer(i int, a *answer, done any) *answer {
	out := map[string]any{"record": i, "status": a.status}
	switch {
	case a.json != nil:
		out["errors"] = a.json
	default:
		out["error"] = a.text
	}
	if done != nil {
		out["done"] = done
	}
	return &answer{status: a.status, json: out, header: a.header}
}

// serveBulkMint is POST /bulk_mint: {"naan": N, "records": [{"shoulder": ..., "url": ...}, ...]}
// → {"arks": ["ark:/...", ...]} in record order. Every record is validated before any is minted
// (a 400 names the record); each is then minted on its own (record i's request ID is the
// Idempotency-Key, "/" and i), so a refusal at record i leaves the records before it minted and
// answers with the refusal's status, the record and the ARKs minted; the same request again
// replays those and goes on.
func (s *Server) serveBulkMint(w http.ResponseWriter, r *http.Request) {
	if !s.only(w, r, http.MethodPost) {
		return
	}
	ctx := r.Context()
	p, a := s.authenticate(ctx, r)
	if a != nil {
		s.write(w, a)
		return
	}
	obj, a := s.readObject(w, r)
	if a != nil {
		s.write(w, a)
		return
	}
	naan, raw, a := s.records(obj)
	if a != nil {
		s.write(w, a)
		return
	}
	key, a := idempotencyKey(r)
	if a != nil {
		s.write(w, a)
		return
	}
	recs := make([]mintRecord, len(raw))
	for i, o := range raw {
		if recs[i], a = parseMint(o, naan); a != nil {
			s.write(w, recordAnswer(i, a, nil))
			return
		}
	}
	c, a := s.conn(ctx, p)
	if a != nil {
		s.write(w, a)
		return
	}
	defer s.release(c)
	arks := make([]string, 0, len(recs))
	for i, m := range recs {
		id := ""
		if key != "" {
			id = key + "/" + strconv.Itoa(i)
		}
		printed, _, a := s.mint(ctx, c, p, m, id)
		if a != nil {
			s.write(w, recordAnswer(i, a, arks))
			return
		}
		arks = append(arks, printed)
	}
	s.write(w, &answer{status: http.StatusOK, json: map[string]any{"arks": arks}})
}

// serveBulkUpdate is PUT /bulk_update: {"records": [{"ark": ..., "url": ...}, ...]} →
// {"updated": N, "unchanged": M}. Every record is validated first (a 400 names the record);
// each is then applied on its own, through the repoint path, in a transaction that holds the key
// (updateHeld: a key revoked meanwhile stops the records after it); a refusal at record i answers with
// its status, the record and the count applied before it.
func (s *Server) serveBulkUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.only(w, r, http.MethodPut) {
		return
	}
	ctx := r.Context()
	p, a := s.authenticate(ctx, r)
	if a != nil {
		s.write(w, a)
		return
	}
	obj, a := s.readObject(w, r)
	if a != nil {
		s.write(w, a)
		return
	}
	_, raw, a := s.records(obj)
	if a != nil {
		s.write(w, a)
		return
	}
	recs := make([]updateRecord, len(raw))
	for i, o := range raw {
		if recs[i], a = parseUpdate(o); a != nil {
			s.write(w, recordAnswer(i, a, nil))
			return
		}
	}
	c, a := s.conn(ctx, p)
	if a != nil {
		s.write(w, a)
		return
	}
	defer s.release(c)
	updated, unchanged := 0, 0
	for i, u := range recs {
		changed, a := s.updateHeld(ctx, c, p, u)
		if a != nil {
			s.write(w, recordAnswer(i, a, map[string]int{"updated": updated, "unchanged": unchanged}))
			return
		}
		if changed {
			updated++
		} else {
			unchanged++
		}
	}
	s.write(w, &answer{status: http.StatusOK, json: map[string]int{"updated": updated, "unchanged": unchanged}})
}

// splitFields splits an Authorization header into its words.
func splitFields(h string) []string { return strings.Fields(h) }

// asKeyError returns err's *ledger.KeyError.
func asKeyError(err error) (*ledger.KeyError, bool) {
	var ke *ledger.KeyError
	ok := errors.As(err, &ke)
	return ke, ok
}
