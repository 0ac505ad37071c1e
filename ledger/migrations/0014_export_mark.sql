-- arkhe ledger: change marks for incremental exports.
--
-- arkhe export prints a watermark, and a later export given it (--since) writes only the ARKs
-- that changed after it. A watermark is two ledger-wide counters read at one instant:
--   * the high-water of ark.seq, the insertion number every ARK row takes (minted or imported);
--   * the high-water of ark_change.mark, a number every ARK_CHANGE row takes from the sequence
--     ark_change_mark (a repoint, tombstone, restore or metadata change).
-- An ARK changed after a watermark (A, C) is one with seq > A or an ARK_CHANGE row with mark > C.
-- ARK_CHANGE rows written before this version have no mark (NULL): they are older than any
-- watermark. Neither counter follows commit order by itself (a transaction may draw a number and
-- commit after a later one), so arkhe_export_mark() reads both while it holds a SHARE lock on
-- ark_change and ark: the lock waits for every transaction writing either table to end and keeps
-- new writers out until the reading transaction ends, so every number at or below the
-- high-waters belongs to a transaction that has ended, and an export that starts after the mark
-- sees every committed row at or below it. A writer waits for at most the mark's own transaction.

-- On Citus the ALTERs of the distributed ark_change run shard by shard on one connection per
-- node, so that the function below may be created in the same transaction.
do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    end if;
end $$;

create sequence ark_change_mark as bigint;

alter table ark_change add column mark bigint;
alter sequence ark_change_mark owned by ark_change.mark;
alter table ark_change alter column mark set default nextval('ark_change_mark');
create index ark_change_mark_idx on ark_change (mark);

comment on column ark_change.mark is
    'ledger-wide change number for incremental exports (sequence ark_change_mark); NULL for rows written before marks existed';

-- The watermark of an export: the high-waters of ark.seq and ark_change.mark (0 when no number
-- was drawn yet), read under a SHARE lock of ark_change and ark (see above). Runs as the owner,
-- so a role that may only read the ledger may take a mark; call it in a transaction of its own
-- and end that transaction at once, since the lock holds writers back until it ends.
create function arkhe_export_mark(out ark_mark bigint, out change_mark bigint)
language plpgsql security definer as $$
begin
    lock table ark_change, ark in share mode;
    ark_mark := coalesce(pg_sequence_last_value(pg_get_serial_sequence('ark', 'seq')::regclass), 0);
    change_mark := coalesce(pg_sequence_last_value('ark_change_mark'::regclass), 0);
end $$;

do $$
begin
    execute format('alter function arkhe_export_mark() set search_path = %I, pg_temp', current_schema());
end $$;
