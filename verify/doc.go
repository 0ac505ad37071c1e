// Package verify is arkhe's nightly integrity audit (`arkhe verify`): a ledger that
// declares non-reassignment proves it from outside: a normalized ARK, once minted or imported, is never deleted,
// re-minted or handed to another object.
//
// [Run] checks a ledger against the rules below and returns, per check, a stable name, a
// severity, a count and up to N example subjects (ARKs in their canonical form "ark:NAAN/name",
// or a shoulder, client or trigger); every finding can also be streamed to a sink (the
// `arkhe verify` command writes them as JSON Lines and Parquet through package report). No
// internal key (seq, shoulder or client id) ever appears in a finding.
//
// # Checks
//
// ARK level, in one pass over the ark table (a binary COPY of key, shoulder, seq and a few
// flags, checked in Go by parallel workers: parse, normalization and the check character are
// the ark package's rules, which SQL cannot apply):
//
//   - ark.syntax: the ledger key parses as an ARK and uses only the allowed characters
//     (draft-kunze-ark §2, §3.2).
//   - ark.normalized: the key is stored in normalized form (draft-kunze-ark §3.2).
//   - ark.width: NAAN ≤ 16, name ≤ 255, key ≤ 272 octets.
//   - ark.check_character: the check character verifies in the shoulder's check zone
//     (NCDA; an imported ARK whose failing verdict the import recorded,
//     check_ok = false, is known and not a finding; an ARK imported without a verdict, under a
//     zone none, into a shoulder adopted since keeps that: the adoption's zone is for new mints).
//   - ark.naan_exists: the key's NAAN is registered.
//   - ark.shoulder_exists: the ARK's shoulder is registered.
//   - ark.shoulder_naan: the shoulder belongs to the ARK's NAAN.
//   - ark.shoulder_prefix: the name starts with the shoulder string and no longer registered
//     shoulder of the NAAN also matches (nested shoulders resolve by longest prefix).
//   - shoulder.minted_after_retired: no ARK was created in a shoulder after the shoulder was
//     retired (retired is one-way).
//
// Set-based, in SQL, on further connections sharing the audit's snapshot:
//
//   - client.pinned_to_retired (warning): no active client that may mint is pinned to a
//     retired shoulder.
//   - receipt.ark_exists: every receipt points at an ARK in the ledger. Receipts are the ark
//     row's request_id and payload_digest, read through the mint_receipt view, so this holds by
//     construction unless the view is redefined; the check costs nothing and stays.
//   - receipt.naan_of_client: the receipt's client is registered and (unless its authority is
//     system) belongs to the ARK's NAAN.
//   - receipt.request_unique: no (client, request ID) maps to two ARKs.
//   - ark.receipt_missing: every ARK minted by arkhe (not imported) has its receipt.
//   - change.chain: per ARK, the ARK_CHANGE rows are numbered 1, 2, ... (seq) without a gap,
//     each row's before target (and status, where both are recorded) equals the previous row's
//     after, and the last after equals the ARK's current target and status, its number the
//     ARK's change count (change_seq).
//   - ledger.digest: nothing was deleted or altered behind the ledger's back (see below).
//   - schema.triggers: the triggers that carry the promises (delete- and truncate-refusing,
//     append-only, ark_update, ark_reach, shoulder_update, client_reach, credential_kind, and
//     those of later migrations) exist, are enabled, call their functions, and those functions
//     are the migrations' (see [ExpectedTriggers]).
//
// Two checks have fast paths for the clean case. Receipts: the multiset of receipt ARKs is
// compared with the multiset of minted ARKs by count and a sum of 64-bit hashes; only when
// they differ do the exact anti-joins behind receipt.ark_exists and ark.receipt_missing run.
// Request IDs: a valid unique index of ark on (created_by, request_id), the ledger's partial
// ark_receipt, makes duplicates impossible, so the grouping query runs only when that index is
// missing or invalid.
//
// # The digest: nothing was deleted
//
// Each audit without error findings appends one audit_summary row: its
// snapshot, the high-water mark (max ark.seq it could see), the ARK count, the digest (sum
// mod 2^64 of hashtextextended(key, seq), computed by the client from the streamed key and seq
// with a port of PostgreSQL's hash, checked against the server's in the tests), ARKs per
// shoulder, and count and digest per block of 65,536 seq values. The next audit recomputes the
// same numbers, in the same pass, over the ARKs at or below that mark which the earlier
// snapshot could see, and compares. "Could see" is decided on the server from each row's xmin
// (its age() against the stored snapshot), so ARKs still being inserted during the earlier
// audit are not counted against it. A row updated since then has a new xmin; it counts only if
// an ARK_CHANGE row written since explains the update (the repoint path). So a row
// deleted, re-keyed, moved to another shoulder or updated with the triggers disabled changes
// the count or digest of its shoulder and block, and is found; the finding names the shoulder
// and the first and last ARK left in the block, never a seq. When the stored snapshot cannot
// be applied (another cluster or database, a restore, or more than 2^31 transactions since),
// every row at or below the mark counts. One rare case is reported although nothing is wrong:
// an ARK inserted by a transaction still open during the earlier audit, below its mark, and
// repointed before this one. A digest finding repeats every night until an operator, having
// investigated, runs an audit with Config.AcceptDigest (`arkhe verify --accept-digest`), which
// records the ledger as it is as the new baseline.
//
// # On Citus
//
// A ledger laid out for Citus (arkhe_layout() 'citus') has no snapshot, transaction id or
// insertion number that spans its nodes: Citus draws seq per node (node group g from
// g·2^48+1), each worker has its own transactions, and the audit's exported snapshot covers the
// coordinator only. So on Citus:
//
//   - ledger.digest compares every ARK with the last clean audit, one-sided: a shoulder's
//     count and each block of a node's insertion numbers may only grow, and a block that did
//     not grow must have the same digest. A deleted, re-keyed or moved ARK is found unless its
//     block gained as many ARKs since (only a block still being filled at the last audit can);
//     a target changed with the triggers off is not (the single node finds it from the row's
//     transaction id), though change.chain finds one on an ARK with history. The check's note
//     says so on every Citus audit.
//   - --since needs one snapshot of the whole ledger: a Citus audit is always a full one (noted).
//   - receipt.ark_exists and ark.receipt_missing matter more: receipts are a table of their own,
//     distributed by request ID apart from the ARKs, with no foreign key between them; their
//     exact queries are outer joins, which Citus plans.
//   - schema.triggers also reads every shard placement on every node: a trigger fires as its
//     shard's copy (trigger_SHARDID), so one disabled or dropped on a shard by a session on a
//     worker, or a worker whose sessions default to session_replication_role = replica, is
//     found although the coordinator's catalog is whole.
//   - An audit racing a mint may see a batch committed on one node and not yet on another
//     (Citus commits a distributed transaction node by node): a receipt.ark_exists or
//     ark.receipt_missing finding that is gone on the next audit was such a race.
//
// # --since
//
// With Config.Since, the ARK-level checks and change.chain cover only ARKs inserted since the
// last clean audit (above its mark, or invisible to its snapshot), updated since, or with
// ARK_CHANGE rows written since. The digest, receipt, client and schema checks still cover the
// whole ledger: the pass still streams every ARK's key, seq and shoulder (the key-only scan;
// only what changed is parsed and checked). Without a usable earlier audit, --since runs a
// full audit.
//
// # Memory
//
// The ARK pass streams the table by binary COPY in batches to a fixed number of workers; the
// set-based checks stream their rows; per-check state is a count and N examples. Memory does
// not grow with the ledger, except the digest's per-block numbers (24 bytes per 65,536 ARKs).
package verify
