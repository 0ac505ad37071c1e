-- arkhe ledger, version 4: the baseline of the nightly integrity audit (`arkhe verify`, issue 5).
--
-- Each clean audit appends one row: what the ledger held in the audit's snapshot, small enough to
-- keep for ever. The next audit recomputes the same numbers for the ARKs at or below high_water
-- that were visible in that snapshot and compares, so a row removed or altered with the triggers
-- disabled is still caught ("nothing was deleted", README decision 3). Internal values only: no
-- column here is ever shown to a user (decision 17); findings name ARKs and shoulders.
create table audit_summary (
    id          bigint generated always as identity primary key,
    -- when the audit's snapshot was taken (now() of its transaction)
    at          timestamptz not null,
    -- the audit's snapshot: tells a later audit which rows and ARK_CHANGE rows it could see
    snapshot    pg_snapshot not null,
    -- pg_control_system().system_identifier || '/' || database oid, or '/' || oid when the role
    -- may not read pg_control_system(); a snapshot is only meaningful on the same origin
    origin      text not null,
    -- max(ark.seq) visible to the audit; 0 for an empty ledger
    high_water  bigint not null check (high_water >= 0),
    -- the ARKs visible to the audit (all of them at or below high_water)
    ark_count   bigint not null check (ark_count >= 0),
    -- order-independent digest of those ARKs: sum mod 2^64 of a 64-bit hash of (seq, key),
    -- stored as a signed bigint (see verify/digest.go)
    digest      bigint not null,
    -- ARKs per shoulder: {"NAAN /shoulder": count}
    shoulders   jsonb not null,
    -- the same count and digest per block of 65,536 seq values: [[block, count, digest], ...],
    -- so a mismatch can be narrowed to the ARKs around it
    blocks      jsonb not null,
    -- true for a full audit, false for --since
    full_audit  boolean not null
);

create trigger audit_summary_no_delete before delete on audit_summary
    for each statement execute function arkhe_refuse_delete();
create trigger audit_summary_no_truncate before truncate on audit_summary
    for each statement execute function arkhe_refuse_delete();
create trigger audit_summary_append_only before update on audit_summary
    for each statement execute function arkhe_refuse_update();
