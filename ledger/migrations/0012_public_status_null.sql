-- arkhe ledger: a public ARK stores no status.
--
-- status NULL means public, as change_seq NULL means 0: the column loses its default, so a minted
-- row (mint does not write the column) and any INSERT that leaves it out store NULL, in no octets,
-- instead of the enum's 4 and their alignment (4.3 B per ARK on the Tate ledger's heap). A row
-- that names 'public' (a hand-written INSERT) keeps it. Both forms mean the same: read
-- ark_status_text(status), which is coalesce(status::text, 'public'); status = 'public' alone
-- finds only the rows that spell it out. 'reserved' and 'unavailable' are always stored, and the
-- enum still refuses any other value.
--
-- ark_status_text defines that reading once: every path of the ledger and every reader in arkhe
-- calls it. The repoint path and the tombstone and export paths record its
-- 'public' in ARK_CHANGE for a NULL status, and an UPDATE through them must leave the row at the
-- status its ARK_CHANGE row describes, read the same way.

-- On Citus the ALTER of the distributed ark runs shard by shard on one connection per node, so
-- that the functions below may be replaced in the same transaction.
do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    end if;
end $$;

alter table ark alter column status drop default, alter column status drop not null;

comment on column ark.status is
    'reserved or unavailable, or public: NULL means public (a minted ARK stores NULL); read ark_status_text(status)';

-- The status an ark row's status column stands for, as text: 'public' for NULL, else the enum's
-- label. A plain SQL function without settings, so that the planner inlines it into the
-- coalesce it is (no call per row).
create function ark_status_text(p_status ark_status) returns text
language sql stable parallel safe as $$
    select coalesce(p_status::text, 'public')
$$;

-- Every UPDATE of ark is refused unless it comes through the repoint path: identity columns (the
-- receipt included) never change, change_seq rises by exactly one from its count (NULL counts
-- 0), and the ARK_CHANGE row with that number exists and describes the new target and status
-- (a NULL status is 'public').
create or replace function arkhe_ark_update() returns trigger language plpgsql as $$
begin
    if new.ark is distinct from old.ark or new.naan is distinct from old.naan
       or new.assigned_name is distinct from old.assigned_name or new.shoulder_id is distinct from old.shoulder_id
       or new.seq is distinct from old.seq or new.created_at is distinct from old.created_at
       or new.created_by is distinct from old.created_by or new.original is distinct from old.original
       or new.import_run_id is distinct from old.import_run_id
       or new.request_id is distinct from old.request_id or new.payload_digest is distinct from old.payload_digest then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of ARK %s refused: identity columns (receipt included) never change', old.ark);
    end if;
    if new.change_seq is distinct from coalesce(old.change_seq, 0) + 1
       or not exists (select 1 from ark_change c
                      where c.ark = new.ark and c.seq = new.change_seq
                        and c.after_url is not distinct from new.url
                        and c.after_status is not distinct from ark_status_text(new.status)) then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of ARK %s refused: minting never becomes an update; a change goes through the repoint path, which appends the ARK_CHANGE row describing it', old.ark),
            hint = 'use select ark_repoint(ark, url, by_client, by_text) or ark_tombstone(...)';
    end if;
    return new;
end $$;

-- The repoint path: appends ARK_CHANGE (before, after, when, by) and updates the target in one
-- transaction. Runs as the ledger's owner (SECURITY DEFINER): a writer may not update ark
-- itself. The caller must be able to act as p_by_client (arkhe_check_actor: scope ark:update, or
-- ark:import within a run p_import_run; reach; binding). A repoint outside a run is recorded in
-- audit_event (ark.repoint); a run's changes are recorded by its run event and ARK_CHANGE. The
-- status does not change; ARK_CHANGE records a NULL one as 'public'.
-- Returns false when the ARK already points there (no change, no row).
create or replace function ark_repoint(p_ark text, p_url text, p_by_client bigint, p_by_text text,
                                       p_at timestamptz default now(), p_import_run bigint default null)
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype; st text; n integer;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    perform arkhe_check_actor(p_by_client, case when p_import_run is null then 'ark:update' else 'ark:import' end,
                              cur.shoulder_id, p_ark, 'repoint');
    if cur.url is not distinct from p_url then
        return false;
    end if;
    st := ark_status_text(cur.status);
    n := coalesce(cur.change_seq, 0) + 1;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            by_client, by_text, import_run_id)
    values (p_ark, n, p_at, 'update', cur.url, p_url, st, st, p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, updated_at = p_at, updated_by = p_by_client, change_seq = n
    where ark = p_ark;
    if p_import_run is null then
        insert into audit_event (client_id, authority, action, target, detail)
        select c.client_id, c.authority, 'ark.repoint', 'ark:' || p_ark,
               jsonb_build_object('before', jsonb_build_object('url', cur.url), 'after', jsonb_build_object('url', p_url),
                                  'note', p_by_text)
        from (select 1) one left join client c on c.id = p_by_client;
    end if;
    return true;
end $$;

-- Withdrawal is a tombstone: a status, a reason and a time, plus an ARK_CHANGE row; the row and
-- the name stay for ever. Runs as the owner; the caller must be able to act as p_by_client with
-- scope ark:tombstone (arkhe_check_actor). Recorded in audit_event (ark.tombstone); the status
-- before is 'public' where the row stores NULL.
create or replace function ark_tombstone(p_ark text, p_reason text, p_by_client bigint, p_by_text text,
                                         p_at timestamptz default now())
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype; st text; n integer;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    perform arkhe_check_actor(p_by_client, 'ark:tombstone', cur.shoulder_id, p_ark, 'tombstone');
    st := ark_status_text(cur.status);
    if st = 'unavailable' then
        return false;
    end if;
    n := coalesce(cur.change_seq, 0) + 1;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            reason, by_client, by_text)
    values (p_ark, n, p_at, 'tombstone', cur.url, cur.url, st, 'unavailable',
            p_reason, p_by_client, p_by_text);
    update ark set status = 'unavailable', tombstone_reason = p_reason, tombstoned_at = p_at,
                   updated_at = p_at, updated_by = p_by_client, change_seq = n
    where ark = p_ark;
    insert into audit_event (client_id, authority, action, target, detail)
    select c.client_id, c.authority, 'ark.tombstone', 'ark:' || p_ark,
           jsonb_build_object('before', jsonb_build_object('status', st),
                              'after', jsonb_build_object('status', 'unavailable', 'reason', p_reason),
                              'note', p_by_text)
    from (select 1) one left join client c on c.id = p_by_client;
    return true;
end $$;

-- The export-acceptance path of `arkhe reconcile --apply` for an ARK whose status, tombstone
-- reason, ERC kernel, commitment or metadata differ from an export (a target-only difference goes
-- through ark_repoint). Like ark_repoint it appends exactly one ARK_CHANGE row (before and after
-- target, status, ERC as jsonb) with the update, runs as the owner, and requires the caller to be
-- able to act as p_by_client with scope ark:import (arkhe_check_actor). action is 'tombstone' when
-- the ARK becomes unavailable (or its tombstone reason changes), 'restore' when it becomes public
-- again, 'update' when the target changes otherwise, else 'metadata'. A status never returns to
-- reserved: a reserved name was never published, and a published one cannot become unpublished
-- (AK002). The ARK's status is read with NULL as 'public', and a public one is written as NULL.
-- Returns false, writing nothing, when the ARK already holds every given value.
create or replace function ark_apply_export(p_ark text, p_url text, p_status text, p_reason text,
                                            p_who text, p_what text, p_when text, p_commitment text,
                                            p_metadata jsonb, p_by_client bigint, p_by_text text,
                                            p_import_run bigint, p_at timestamptz default now())
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype; act text; st text; n integer;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    perform arkhe_check_actor(p_by_client, 'ark:import', cur.shoulder_id, p_ark, 'apply');
    st := ark_status_text(cur.status);
    if cur.url is not distinct from p_url and st = p_status
       and cur.tombstone_reason is not distinct from p_reason
       and cur.erc_who is not distinct from p_who and cur.erc_what is not distinct from p_what
       and cur.erc_when is not distinct from p_when and cur.commitment is not distinct from p_commitment
       and cur.metadata is not distinct from p_metadata then
        return false;
    end if;
    if p_status = 'reserved' and st <> 'reserved' then
        raise exception using errcode = 'AK002',
            message = format('ARK %s: status %s never returns to reserved (a published name cannot be unpublished)', p_ark, st);
    end if;
    act := case
        when p_status = 'unavailable' and (st <> 'unavailable'
              or cur.tombstone_reason is distinct from p_reason) then 'tombstone'
        when p_status <> st then 'restore'
        when p_url is distinct from cur.url then 'update'
        else 'metadata' end;
    n := coalesce(cur.change_seq, 0) + 1;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text, import_run_id)
    values (p_ark, n, p_at, act, cur.url, p_url, st, p_status, p_reason,
            jsonb_build_object('who', cur.erc_who, 'what', cur.erc_what, 'when', cur.erc_when,
                               'commitment', cur.commitment, 'metadata', cur.metadata,
                               'tombstone_reason', cur.tombstone_reason),
            jsonb_build_object('who', p_who, 'what', p_what, 'when', p_when,
                               'commitment', p_commitment, 'metadata', p_metadata,
                               'tombstone_reason', p_reason),
            p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, status = nullif(p_status, 'public')::ark_status, tombstone_reason = p_reason,
                   tombstoned_at = case when p_status <> 'unavailable' then null
                                        when st = 'unavailable' then cur.tombstoned_at
                                        else p_at end,
                   erc_who = p_who, erc_what = p_what, erc_when = p_when, commitment = p_commitment,
                   metadata = p_metadata, updated_at = p_at, updated_by = p_by_client,
                   change_seq = n
    where ark = p_ark;
    return true;
end $$;

-- Replacing a function resets its settings: every function of the ledger resolves names in the
-- ledger's schema again, with temporary objects last.
do $$
declare f regprocedure;
begin
    for f in select p.oid::regprocedure from pg_proc p
             where p.pronamespace = (select oid from pg_namespace where nspname = current_schema())
               and (p.proname like 'arkhe\_%' or p.proname like 'ark\_%')
               and p.proname <> 'ark_status_text' -- a setting would keep the planner from inlining it
               and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e') loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;
