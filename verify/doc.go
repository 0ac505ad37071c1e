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
//   - receipt.ark_exists: every receipt points at an ARK in the ledger. On the single layout
//     receipts are the ark row's request_id and payload_digest, read through the mint_receipt
//     view, so this holds by construction unless the view is redefined.
//   - receipt.naan_of_client: the receipt's client is registered and (unless its authority is
//     system) belongs to the ARK's NAAN.
//   - receipt.request_unique: no (client, request ID) maps to two ARKs.
//   - ark.receipt_missing: every ARK minted by arkhe (not imported, or put back from a mint
//     map by a recovery, whose import run's format is ledger.ImportFormatMintMap) has its
//     receipt.
//   - change.chain: per ARK, the ARK_CHANGE rows are numbered 1, 2, ... (seq) without a gap,
//     each row's before target (and status, where both are recorded) equals the previous row's
//     after, and the last after equals the ARK's current target and status, its number the
//     ARK's change count (change_seq).
//   - receipt.layout (one node): the receipt table is empty. There a mint receipt is the ark
//     row's request_id and payload_digest (with created_by), read through mint_receipt; the
//     receipt table exists so that both layouts have one description, and holds the receipts
//     on Citus only. A row in it on one node would escape every receipt check.
//   - ledger.digest: nothing was deleted or altered behind the ledger's back (see below).
//   - schema.triggers: the triggers that carry the promises (delete- and truncate-refusing,
//     append-only, ark_update, ark_reach, shoulder_update, client_reach, credential_kind, and
//     those of later migrations) exist, are enabled, call their functions, and those functions
//     are the migrations' (see [ExpectedTriggers]).
//   - ledger.signals (--since only): nothing changed the tables behind the ledger's paths since
//     the last full audit (see --since below).
//   - ledger.rollback (with Config.Baseline): no shoulder holds fewer ARKs or has fewer draws
//     (shoulder_tally), and the ledger's high-water mark (its largest insertion number) is not
//     lower, than the baseline file recorded. The file lives outside the ledger, so a ledger
//     restored from an earlier backup, whose own audit summaries went back with it and agree
//     with it, is still found: it has forgotten ARKs that were minted and published since the
//     backup, and random draws may hand those names out again. The finding names each shoulder
//     with the counts then and now. The file only rises: a full audit without this finding
//     replaces it with the larger of each of its numbers and the ledger's.
//
// One pass over ark feeds several checks, and three have fast paths for the clean case.
// Receipts: on the single layout, when mint_receipt is the migrations' view of ark's receipt
// columns, the ARK pass also reads each row's receipt client; else (Citus, or a redefined view)
// one query reads the receipts. The multiset of receipt ARKs is compared with the multiset of
// minted ARKs by count and a sum of 64-bit hashes; only when they differ do the exact
// anti-joins behind receipt.ark_exists and ark.receipt_missing run, and the query of
// receipt.naan_of_client only when a receipt's client is unregistered or of another NAAN.
// Request IDs: a valid unique index of ark on (created_by, request_id), the ledger's partial
// ark_receipt, makes duplicates impossible, so the grouping query runs only when that index is
// missing or invalid. change.chain: the ARK pass sums a hash of (key, change count, target) and
// of (key, status) over the ARKs with a history; one sorted pass over ARK_CHANGE sums the same
// over each ARK's last row and counts the rows that break the chain inside a history; only when
// a count or sum differs, or a last row recorded no status, does the exact query, which looks
// each ARK up, run and name the ARKs.
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
//   - --since needs one snapshot of the whole ledger: a Citus audit is always a full one (noted),
//     which with --since also compares the tamper signals of every node (see --since).
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
// A full audit reads every ARK; `--since` (Config.Since) reads what changed through the
// ledger's paths since the last full audit, plus signals that show whether anything changed
// behind them, and costs what changed, not what the ledger holds. On the single layout, with a
// last full audit that recorded its signals (audit_summary.signals) and whose snapshot applies:
//
//   - the ARK-level checks, the receipts and the digest's count cover the ARKs numbered above
//     that audit's mark (the BRIN index on seq) and those with an ARK_CHANGE row it could not
//     see; change.chain covers the latter; client, request ID and schema checks run whole;
//   - ledger.signals compares, table by protected table (those with the ledger's triggers), the
//     file node (TRUNCATE, VACUUM FULL, CLUSTER or a rewriting ALTER TABLE give a new one), the
//     statistics collector's counters (pg_stat_all_tables: no deleted row in a table that refuses
//     DELETE, no updated row in an append-only one, no more updated ark rows than inserted
//     ARK_CHANGE rows, which the repoint path writes one per update in the same transaction, no
//     more inserted ark rows than ARKs found above the mark), whether the statistics were reset
//     or went back (pg_stat_reset, a crash), and an md5 of the protected tables' columns,
//     constraints, indexes and the migrations applied. The triggers' state is schema.triggers.
//     A signal is a finding that recommends the full audit;
//   - the digest is not recomputed, and a --since audit records no baseline: the next one
//     compares with the last full audit again.
//
// What --since cannot catch, and a periodic full audit (weekly, say) does: a change that leaves
// the file nodes and the counters as they were, e.g. a direct write to the table's files, or
// writes whose counters were lost in a crash (crash recovery discards the statistics: the
// counters going back is a signal, unless the writes since have carried them past the recorded
// values); an update behind the triggers offset by as many ARK_CHANGE rows forged with it
// (change.chain then checks those rows); a trigger disabled and enabled again between two
// audits, unless its table's counters moved meanwhile. A superuser's write with
// session_replication_role = replica is counted like any other, and caught as above. The
// statistics reach the counters up to seconds after a transaction ends (the audit first makes
// its own process's idle connections send theirs): a change made just before --since may show
// only on the next run, and writes committed between the full audit's snapshot and its reading
// of the counters leave as much room. A
// false alarm also comes from a repoint rolled back after its update, or an ARK written by a
// transaction still open during the full audit and numbered below its mark; the full audit the
// signal recommends clears it. Without a usable last full audit with signals, --since runs a
// full audit (and says so).
//
// On Citus, --since is a full audit (no snapshot spans the nodes) that also compares the
// signals, read from every node (each shard placement on its own, and the coordinator's tables)
// and naming the node: this finds an update with the triggers off, which Citus's digest cannot.
// The inserted-rows comparison is left out there: a worker's counters of the ARKs written before
// the full audit may still be arriving.
//
// # Memory
//
// The ARK pass streams the table by binary COPY in batches to a fixed number of workers; the
// set-based checks stream their rows; per-check state is a count and N examples. Memory does
// not grow with the ledger, except the digest's per-block numbers (24 bytes per 65,536 ARKs),
// and the set of ARKs changed since the last audit (what changed, not what the ledger holds).
package verify
