-- arkhe ledger, version 3: what `arkhe import` and `arkhe reconcile --apply` need (issue 4).
--
-- import_run records every run that brought rows into the ledger or accepted an export's values:
-- the command, the source file, its format and SHA-256 digest, the counts (jsonb) and, when the run
-- acted as a registered client, that client. Each imported ARK, NAAN and shoulder carries the run
-- that brought it (import_run_id, version 1); each ARK_CHANGE written by `reconcile --apply` the
-- run that wrote it. The internal run key is never shown to a user (README decisions 6 and 17):
-- outputs name the file and its digest instead.
alter table import_run
    add column command   text not null default 'import' check (command in ('import', 'reconcile')),
    add column client_pk bigint references client;

-- arklet's ark.naan rows carry a free-text description (legacy-formats.md §1.1); kept here.
alter table naan add column note text;

-- The export-acceptance path of `arkhe reconcile --apply` for an ARK whose status, tombstone
-- reason, ERC kernel, commitment or metadata differ from an export (a target-only difference goes
-- through ark_repoint). Like ark_repoint it appends exactly one ARK_CHANGE row — before and after
-- target, status, ERC (as jsonb) — and then updates the ARK in the same transaction, which the
-- ark_update trigger requires (README decision 7). action is 'tombstone' when the ARK becomes
-- unavailable (or its tombstone reason changes), 'restore' when it becomes public again, 'update'
-- when the target changes otherwise, else 'metadata'. A status never returns to reserved (EZID
-- transitions, legacy-formats.md §3.2): that is refused with AK002. Returns false, writing
-- nothing, when the ARK already holds every given value.
create function ark_apply_export(p_ark text, p_url text, p_status text, p_reason text,
                                 p_who text, p_what text, p_when text, p_commitment text,
                                 p_metadata jsonb, p_by_client bigint, p_by_text text,
                                 p_import_run bigint, p_at timestamptz default now())
returns boolean language plpgsql as $$
declare cur ark%rowtype; act text;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    if cur.url is not distinct from p_url and cur.status = p_status
       and cur.tombstone_reason is not distinct from p_reason
       and cur.erc_who is not distinct from p_who and cur.erc_what is not distinct from p_what
       and cur.erc_when is not distinct from p_when and cur.commitment is not distinct from p_commitment
       and cur.metadata is not distinct from p_metadata then
        return false;
    end if;
    if p_status = 'reserved' and cur.status <> 'reserved' then
        raise exception using errcode = 'AK002',
            message = format('ARK %s: status %s never returns to reserved (legacy-formats.md §3.2)', p_ark, cur.status);
    end if;
    act := case
        when p_status = 'unavailable' and (cur.status <> 'unavailable'
              or cur.tombstone_reason is distinct from p_reason) then 'tombstone'
        when p_status <> cur.status then 'restore'
        when p_url is distinct from cur.url then 'update'
        else 'metadata' end;
    insert into ark_change (ark, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text, import_run_id)
    values (p_ark, p_at, act, cur.url, p_url, cur.status, p_status, p_reason,
            jsonb_build_object('who', cur.erc_who, 'what', cur.erc_what, 'when', cur.erc_when,
                               'commitment', cur.commitment, 'metadata', cur.metadata,
                               'tombstone_reason', cur.tombstone_reason),
            jsonb_build_object('who', p_who, 'what', p_what, 'when', p_when,
                               'commitment', p_commitment, 'metadata', p_metadata,
                               'tombstone_reason', p_reason),
            p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, status = p_status, tombstone_reason = p_reason,
                   tombstoned_at = case when p_status <> 'unavailable' then null
                                        when cur.status = 'unavailable' then cur.tombstoned_at
                                        else p_at end,
                   erc_who = p_who, erc_what = p_what, erc_when = p_when, commitment = p_commitment,
                   metadata = p_metadata, updated_at = p_at, updated_by = p_by_client
    where ark = p_ark;
    return true;
end $$;
