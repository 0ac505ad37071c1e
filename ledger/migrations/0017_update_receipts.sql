-- arkhe ledger, version 17: bulk change of ARKs, set-based, through the repoint path, with receipts.
--
-- A bulk change (arkhe update) stages a batch of change rows in ark_update_stage (COPY, in the
-- batch's own transaction, under a token of its own) and applies them with one call of
-- ark_update_apply, which runs as the owner and does for the whole batch what ark_repoint and
-- ark_tombstone do for one ARK: it locks the ARKs in ARK order, checks the client's reach per
-- shoulder (arkhe_check_actor, the single change's rule and message), appends one ARK_CHANGE row
-- per changed ARK with before and after, then updates the ark rows, whose ark_update trigger
-- checks each against its ARK_CHANGE row as for a single change. An identity column is never
-- written. A row that changes nothing appends nothing.
--
-- Receipts. Each applied row leaves a receipt in update_receipt: the client, its change request
-- ID, the ARK and the digest of what the row asked for. A row whose receipt exists is reported as
-- applied earlier and changes nothing again, so a manifest re-run after a crash applies nothing
-- twice; the same request ID for the same ARK with other values is refused. On Citus both tables
-- are distributed by the ARK and co-located with ark, so every statement of the apply runs shard
-- by shard beside the ARKs it changes.
--
-- The staged rows of a batch are deleted by the apply, in the batch's transaction; a batch rolled
-- back leaves none.

-- On Citus the tables are distributed on one connection per node, so that the functions below
-- may be created in the same transaction.
do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    end if;
end $$;

create table update_receipt (
    ark         varchar(272) not null collate "C",
    client_pk   bigint not null,
    request_id  varchar(255) not null collate "C",
    digest      bytea not null check (length(digest) = 16),
    applied_at  timestamptz not null default now(),
    change_seq  integer,
    run         bigint not null,
    primary key (ark, client_pk, request_id)
);

comment on table update_receipt is
    'The receipts of bulk changes (arkhe update): client, change request ID and ARK -> the digest of the change asked for, and the ARK_CHANGE seq it wrote (NULL: it changed nothing).';

create unlogged table ark_update_stage (
    token       bigint not null,
    idx         integer not null,
    ark         varchar(272) not null collate "C",
    request_id  varchar(255) not null collate "C",
    digest      bytea not null,
    mask        integer not null,
    url         text,
    erc_who     text,
    erc_what    text,
    erc_when    text,
    commitment  text,
    status      text,
    reason      text,
    outcome     text,
    detail      text,
    -- token first: every statement of the apply reads one batch's rows through it, never the
    -- dead rows earlier batches left (the table is written and emptied once per batch)
    primary key (token, ark)
);

comment on table ark_update_stage is
    'Change rows of bulk changes in flight, staged by COPY and consumed by ark_update_apply in the same transaction; empty between batches.';

create sequence ark_update_token as bigint;

do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.enable_unsafe_triggers', 'on', true);
        perform create_distributed_table('update_receipt', 'ark', colocate_with => 'ark');
        perform create_distributed_table('ark_update_stage', 'ark', colocate_with => 'ark');
    end if;
end $$;

-- A status is read as (case a.status when ... end), not ark_status_text: Citus refuses a
-- function that is not immutable with a column reference in an UPDATE of a distributed table
-- (so the messages are built with || of text, not format).
--
-- The mask bits of a staged row: which columns the manifest holds (a column it lacks is left
-- alone; a present column with an empty value empties it).
--   1 url, 2 erc_who, 4 erc_what, 8 erc_when, 16 commitment, 32 status, 64 reason

-- ark_update_apply applies the batch staged under p_token (of run p_run: its first token; with
-- p_check_run it looks for ARKs the run changed in an earlier batch by another change row) as client p_by_client (by_text p_by_text)
-- and returns each staged row's outcome: changed, unchanged, earlier (its receipt exists),
-- unknown (no such ARK), refused (detail: the rule). Reach is checked per shoulder with
-- arkhe_check_actor: scope ark:update for a change of target, ERC or commitment, ark:tombstone
-- for a change of status.
create function ark_update_apply(p_token bigint, p_run bigint, p_check_run boolean, p_by_client bigint, p_by_text text,
                                 p_at timestamptz default now())
returns table (idx integer, outcome text, detail text)
language plpgsql security definer as $$
declare r record; rule text;
begin
    if arkhe_layout() = 'single' then
        -- ARK order: concurrent runs over overlapping manifests never deadlock
        perform 1 from ark a where a.ark in (select s.ark from ark_update_stage s where s.token = p_token)
        order by a.ark for update of a;
    end if;
    update ark_update_stage s set outcome = 'unknown', detail = 'ARK ' || s.ark::text || ' is not in the ledger'
    where s.token = p_token and not exists (select 1 from ark a where a.ark = s.ark);
    update ark_update_stage s set outcome = case when u.digest = s.digest then 'earlier' else 'refused' end,
           detail = case when u.digest = s.digest then null
                         else 'change request ID ' || s.request_id::text || ' was applied to ARK ' || s.ark::text || ' earlier with other values' end
    from update_receipt u
    where s.token = p_token and s.outcome is null
      and u.ark = s.ark and u.client_pk = p_by_client and u.request_id = s.request_id;
    -- an ARK changed earlier in the same run by another change row: the manifest named it twice
    if p_check_run then
    update ark_update_stage s set outcome = 'refused',
           detail = 'ARK ' || s.ark::text || ' is named twice in the manifest with different values (the earlier row was applied as change request ' || u.request_id::text || ')'
    from update_receipt u
    where s.token = p_token and s.outcome is null
      and u.ark = s.ark and u.client_pk = p_by_client and u.run = p_run and u.request_id <> s.request_id;
    end if;
    -- status rules
    if exists (select 1 from ark_update_stage s where s.token = p_token and s.mask & 32 <> 0) then
    update ark_update_stage s set outcome = 'refused',
           detail = case when s.status not in ('public', 'unavailable', 'reserved') then
                             'status ' || s.status || ' of ARK ' || s.ark::text || ': want public or unavailable'
                         when s.status = 'reserved' and (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'reserved' then
                             'ARK ' || s.ark::text || ': status ' || (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) || ' never returns to reserved (a published name cannot be unpublished)'
                         else 'ARK ' || s.ark::text || ': a tombstone needs a reason' end
    from ark a
    where s.token = p_token and s.outcome is null and a.ark = s.ark and s.mask & 32 <> 0
      and (s.status not in ('public', 'unavailable', 'reserved')
           or (s.status = 'reserved' and (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'reserved')
           or (s.status = 'unavailable' and (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'unavailable'
               and coalesce(case when s.mask & 64 <> 0 then s.reason else null end, '') = ''));
    end if;
    -- reach, per shoulder and scope, with the single change's rule and message
    for r in select a.shoulder_id, (s.mask & 32 <> 0) as st, min(s.ark) as first
             from ark_update_stage s join ark a on a.ark = s.ark
             where s.token = p_token and s.outcome is null
             group by a.shoulder_id, (s.mask & 32 <> 0) loop
        rule := null;
        begin
            perform arkhe_check_actor(p_by_client, case when r.st then 'ark:tombstone' else 'ark:update' end,
                                      r.shoulder_id, r.first, 'update');
        exception when sqlstate 'AK004' or sqlstate 'AK006' then
            rule := sqlerrm;
        end;
        if rule is not null then
            update ark_update_stage s set outcome = 'refused', detail = rule
            from ark a
            where s.token = p_token and s.outcome is null and a.ark = s.ark
              and a.shoulder_id = r.shoulder_id and (s.mask & 32 <> 0) = r.st;
        end if;
    end loop;
    -- unchanged rows
    update ark_update_stage s set outcome = 'unchanged'
    from ark a
    where s.token = p_token and s.outcome is null and a.ark = s.ark
      and (s.mask & 1 = 0 or a.url is not distinct from nullif(s.url, ''))
      and (s.mask & 2 = 0 or a.erc_who is not distinct from nullif(s.erc_who, ''))
      and (s.mask & 4 = 0 or a.erc_what is not distinct from nullif(s.erc_what, ''))
      and (s.mask & 8 = 0 or a.erc_when is not distinct from nullif(s.erc_when, ''))
      and (s.mask & 16 = 0 or a.commitment is not distinct from nullif(s.commitment, ''))
      and (s.mask & 32 = 0 or (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) = s.status)
      and (s.mask & 64 = 0 or (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'unavailable' or s.status = 'public'
           or a.tombstone_reason is not distinct from nullif(s.reason, ''));
    update ark_update_stage s set outcome = 'changed' where s.token = p_token and s.outcome is null;
    -- one ARK_CHANGE row per changed ARK, then the ark rows (checked against it by ark_update)
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text)
    select a.ark, coalesce(a.change_seq, 0) + 1, p_at,
           case when n.status = 'unavailable' and (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'unavailable' then 'tombstone'
                when n.status <> (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) then 'restore'
                when n.url is distinct from a.url then 'update'
                else 'metadata' end,
           a.url, n.url, (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end), n.status, nullif(s.reason, ''),
           jsonb_build_object('who', a.erc_who, 'what', a.erc_what, 'when', a.erc_when,
                              'commitment', a.commitment, 'tombstone_reason', a.tombstone_reason),
           jsonb_build_object('who', n.who, 'what', n.what, 'when', n.when_, 'commitment', n.commitment,
                              'tombstone_reason', n.tombstone_reason),
           p_by_client, p_by_text
    from ark_update_stage s join ark a on a.ark = s.ark,
         lateral (select case when s.mask & 1 <> 0 then nullif(s.url, '') else a.url end as url,
                         case when s.mask & 2 <> 0 then nullif(s.erc_who, '') else a.erc_who end as who,
                         case when s.mask & 4 <> 0 then nullif(s.erc_what, '') else a.erc_what end as what,
                         case when s.mask & 8 <> 0 then nullif(s.erc_when, '') else a.erc_when end as when_,
                         case when s.mask & 16 <> 0 then nullif(s.commitment, '') else a.commitment end as commitment,
                         case when s.mask & 32 <> 0 then s.status else (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) end as status,
                         case when (case when s.mask & 32 <> 0 then s.status else (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) end) <> 'unavailable' then null
                              when s.mask & 64 <> 0 then nullif(s.reason, '')
                              else a.tombstone_reason end as tombstone_reason) n
    where s.token = p_token and s.outcome = 'changed';
    update ark a set url = case when s.mask & 1 <> 0 then nullif(s.url, '') else a.url end,
                     erc_who = case when s.mask & 2 <> 0 then nullif(s.erc_who, '') else a.erc_who end,
                     erc_what = case when s.mask & 4 <> 0 then nullif(s.erc_what, '') else a.erc_what end,
                     erc_when = case when s.mask & 8 <> 0 then nullif(s.erc_when, '') else a.erc_when end,
                     commitment = case when s.mask & 16 <> 0 then nullif(s.commitment, '') else a.commitment end,
                     status = case when s.mask & 32 <> 0 then (case s.status when 'unavailable' then 'unavailable'::ark_status when 'reserved' then 'reserved'::ark_status end) else a.status end,
                     tombstone_reason = case when (case when s.mask & 32 <> 0 then s.status else (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) end) <> 'unavailable' then null
                                             when s.mask & 64 <> 0 then nullif(s.reason, '')
                                             else a.tombstone_reason end,
                     tombstoned_at = case when (case when s.mask & 32 <> 0 then s.status else (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) end) <> 'unavailable' then null
                                          when (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) = 'unavailable' then a.tombstoned_at
                                          else p_at end,
                     updated_at = p_at, updated_by = p_by_client,
                     change_seq = coalesce(a.change_seq, 0) + 1
    from ark_update_stage s
    where s.token = p_token and s.outcome = 'changed' and a.ark = s.ark;
    insert into update_receipt (ark, client_pk, request_id, digest, applied_at, change_seq, run)
    select s.ark, p_by_client, s.request_id, s.digest, p_at, case when s.outcome = 'changed' then a.change_seq end, p_run
    from ark_update_stage s join ark a on a.ark = s.ark
    where s.token = p_token and s.outcome in ('changed', 'unchanged')
    on conflict do nothing;
    return query select s.idx, s.outcome, s.detail from ark_update_stage s where s.token = p_token;
    delete from ark_update_stage s where s.token = p_token;
end $$;

-- The roles' privileges, on top of those granted before: the writer stages rows and applies them
-- through ark_update_apply (it writes no ark or ark_change row itself), reads the receipts and
-- draws tokens; every role reads the receipts and the (empty between batches) staging table.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0017;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0017();
    execute format('grant select on update_receipt to %I, %I, %I', p, w, a);
    execute format('grant select on ark_update_stage to %I, %I, %I', p, w, a);
    execute format('grant insert on ark_update_stage to %I', w);
    execute format('grant usage on sequence ark_update_token to %I', w);
    execute format('grant execute on function ark_update_apply(bigint, bigint, boolean, bigint, text, timestamptz) to %I', w);
end $$;

revoke execute on function arkhe_grant_roles(), ark_update_apply(bigint, bigint, boolean, bigint, text, timestamptz) from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'ark_update_apply(bigint, bigint, boolean, bigint, text, timestamptz)'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;
