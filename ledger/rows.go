package ledger

import "time"

// ChangeRow is one ARK_CHANGE row as `arkhe report changes` writes it
// (where the ARK used to point). Columns, in order:
//
//   - ark (string, never NULL): the ARK in its canonical modern form
//     "ark:NAAN/name", e.g. "ark:99999/x9tn1qkq2g7" (the
//     modern label everywhere an ARK is printed); never an internal key.
//   - naan (string, never NULL): the NAAN, a string ("099999" is not "99999").
//   - shoulder (string, never NULL): the shoulder as the ledger stores it, with
//     its slash, e.g. "/x9" (draft-kunze-ark §2); "" only for the history of an
//     ARK that is no longer in the ledger (which `arkhe verify` reports).
//   - at (TIMESTAMP(isAdjustedToUTC=true, unit=MICROS), NULL allowed): when the
//     change was made; the instant is kept, finer than a microsecond is
//     truncated. NULL only where the ledger has no time for the change
//     (history imported from a legacy system that kept none:
//     unknown is NULL, never "now").
//   - action (string, never NULL): what the change did, as the ledger records
//     it: "update" (repointed), "tombstone" (withdrawn; the ARK stays),
//     "metadata" (ERC fields changed) or "restore" (a tombstone lifted).
//   - before_url (string, NULL allowed): the target before the change. NULL
//     when the ledger holds no previous target; "" when the target was truly
//     empty (an empty url returns the description).
//   - after_url (string, NULL allowed): the target after the change, with the
//     same NULL / "" rule as before_url.
//   - by (string, NULL allowed): the public client_id of the client that made
//     the change, never its internal key; for a change
//     without a registered client (e.g. imported history), who made it as the
//     source recorded it; NULL when neither is known. Never "".
//   - reason (string, NULL allowed): why, as recorded with the change: a tombstone's reason,
//     the reason of an applied export, the --reason of `arkhe ark repoint`; NULL when none was
//     given.
type ChangeRow struct {
	ARK       string     `parquet:"ark"`
	NAAN      string     `parquet:"naan,dict"`
	Shoulder  string     `parquet:"shoulder,dict"`
	At        *time.Time `parquet:"at,timestamp(microsecond:utc)"`
	Action    string     `parquet:"action,dict"`
	BeforeURL *string    `parquet:"before_url"`
	AfterURL  *string    `parquet:"after_url"`
	By        *string    `parquet:"by,dict"`
	Reason    *string    `parquet:"reason"`
}

// ARKRow is one ARK of the ledger as `arkhe report arks` writes it . Columns,
// in order:
//
//   - ark, naan, shoulder (string, never NULL): as in [ChangeRow].
//   - target (string, NULL allowed): the URL the ARK resolves to. "" is a real
//     value (an empty url returns the description); NULL only
//     where the ledger holds none.
//   - who, what, when (string, NULL allowed): the ERC kernel elements as
//     stored, kernel codes such as "(:unkn)" included verbatim. NULL when the element was never given; "" only when it was given
//     empty.
//   - commitment (string, NULL allowed): the commitment statement for this
//     object; NULL when none was recorded.
//   - status (string, never NULL): the ARK's state as the ledger records it
//     (e.g. "public", "reserved", "unavailable" for a tombstone).
//   - tombstone_reason (string, NULL allowed): why the ARK was withdrawn;
//     NULL unless it is tombstoned (and then NULL only if no reason was kept).
//   - created_at, updated_at (TIMESTAMP(isAdjustedToUTC=true, unit=MICROS),
//     NULL allowed): when the ARK was minted or imported and last changed; NULL
//     where the ledger (or the legacy source it was imported from) has no time.
//   - metadata (string, NULL allowed): the ARK's other fields as one JSON object in text form,
//     e.g. {"dc.date": "2000-09-22", "ezid.owner": "432"}: what an import kept of arklet's and
//     EZID's fields beyond the ERC kernel; NULL when there are none.
type ARKRow struct {
	ARK             string     `parquet:"ark"`
	NAAN            string     `parquet:"naan,dict"`
	Shoulder        string     `parquet:"shoulder,dict"`
	Target          *string    `parquet:"target"`
	Who             *string    `parquet:"who"`
	What            *string    `parquet:"what"`
	When            *string    `parquet:"when"`
	Commitment      *string    `parquet:"commitment,dict"`
	Status          string     `parquet:"status,dict"`
	TombstoneReason *string    `parquet:"tombstone_reason"`
	CreatedAt       *time.Time `parquet:"created_at,timestamp(microsecond:utc)"`
	UpdatedAt       *time.Time `parquet:"updated_at,timestamp(microsecond:utc)"`
	Metadata        *string    `parquet:"metadata"`
}

// LinkRow is one ARK's link-check state as `arkhe report links` writes it. Columns, in order:
//
//   - ark, naan, shoulder (string, never NULL): as in [ChangeRow].
//   - manager (string, NULL allowed): the name of the manager holding the ARK's shoulder; NULL
//     when the shoulder has none.
//   - target (string, NULL allowed): the ARK's target in the ledger now.
//   - checked_target (string, NULL allowed): the target the state is about (the ARK's target
//     when it was last checked or repointed); it equals target unless the ARK was repointed to
//     no target.
//   - status (string, never NULL): the ARK's status (public, reserved, unavailable).
//   - checked_at (TIMESTAMP(isAdjustedToUTC=true, unit=MICROS), NULL allowed): the last check;
//     NULL when the target was never checked (e.g. reset by a repoint).
//   - outcome (string, NULL allowed): good, failed or inconclusive (429 answers); NULL when
//     never checked.
//   - status_code (INT32, NULL allowed): the HTTP status of the last answer; NULL when there
//     was none.
//   - error_class (string, NULL allowed): why there was no usable answer (dns, refused,
//     unreachable, reset, timeout, tls, blocked, bad_url, bad_scheme, redirect_loop,
//     too_many_redirects, bad_redirect, other); NULL when the status is the verdict.
//   - final_url (string, NULL allowed): the last URL requested, after redirects; NULL when no
//     request was made or the source did not record it (imported state).
//   - mime_type (string, NULL allowed): the Content-Type of the last answer, verbatim.
//   - size (INT64, NULL allowed): the body's size in bytes; NULL when unknown.
//   - duration_ms (INT32, NULL allowed): time spent in requests, in milliseconds; NULL when no
//     request was timed.
//   - redirects (INT32, NULL allowed): redirects followed; NULL when never checked.
//   - body_hash (string, NULL allowed): lower-case hex digest of the body bytes a GET read,
//     and hash_alg (string, NULL allowed) its algorithm: sha256 for arkhe's checks, md5 for
//     state imported from EZID.
//   - consecutive_failures (INT32, never NULL): failed checks since the last good one.
//   - first_failure_at, last_success_at (TIMESTAMP, NULL allowed): the first of those failures
//     and the last good check; NULL when none (or unknown, for imported state).
//   - broken (BOOLEAN, never NULL): the target failed at least the threshold's number of
//     checks in a row over at least the fail span.
//   - due_at (TIMESTAMP, NULL allowed): when the target is next due; NULL: due now.
//   - imported (BOOLEAN, never NULL): the state came from a legacy link checker's export.
type LinkRow struct {
	ARK                 string     `parquet:"ark"`
	NAAN                string     `parquet:"naan,dict"`
	Shoulder            string     `parquet:"shoulder,dict"`
	Manager             *string    `parquet:"manager,dict"`
	Target              *string    `parquet:"target"`
	CheckedTarget       *string    `parquet:"checked_target"`
	Status              string     `parquet:"status,dict"`
	CheckedAt           *time.Time `parquet:"checked_at,timestamp(microsecond:utc)"`
	Outcome             *string    `parquet:"outcome,dict"`
	StatusCode          *int32     `parquet:"status_code"`
	ErrorClass          *string    `parquet:"error_class,dict"`
	FinalURL            *string    `parquet:"final_url"`
	MIMEType            *string    `parquet:"mime_type,dict"`
	Size                *int64     `parquet:"size"`
	DurationMS          *int32     `parquet:"duration_ms"`
	Redirects           *int32     `parquet:"redirects"`
	BodyHash            *string    `parquet:"body_hash"`
	HashAlg             *string    `parquet:"hash_alg,dict"`
	ConsecutiveFailures int32      `parquet:"consecutive_failures"`
	FirstFailureAt      *time.Time `parquet:"first_failure_at,timestamp(microsecond:utc)"`
	LastSuccessAt       *time.Time `parquet:"last_success_at,timestamp(microsecond:utc)"`
	Broken              bool       `parquet:"broken"`
	DueAt               *time.Time `parquet:"due_at,timestamp(microsecond:utc)"`
	Imported            bool       `parquet:"imported"`
}
