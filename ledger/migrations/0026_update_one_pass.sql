-- arkhe ledger, version 26: a bulk change settles its staged rows in one pass.
--
-- ark_update_apply (migrations 0017 and 0022) settled a batch with a chain of UPDATEs of its
-- staged rows (unknown ARKs, receipts, status rules, changed or not), each of which joined the
-- rows with ark again and wrote a new version of every row it touched, and then joined ark once
-- more for the ARK_CHANGE rows and once more for the receipts. Now one INSERT … SELECT reads
-- each staged row with its ark row and its receipt once (outer joins) and writes its verdict to
-- ark_update_verdict: the outcome and detail under every rule but reach, the ARK's shoulder, and
-- the ARK_CHANGE row a change appends (its seq, action, before and after). Reach is checked per
-- shoulder on the verdicts; the ARK_CHANGE rows and the receipts are written from the verdicts
-- alone, and the ark rows are updated from them through the repoint path, as before. The rules,
-- their order, their messages, the lock order on one node and the results are 0022's; the
-- function keeps its signature, so its owner and grants stay. On one node the receipts are
-- inserted without ON CONFLICT: the locks rule out a receipt there already (see below).
--
-- The look-up of ARKs the run changed in an earlier batch (a manifest naming an ARK twice) was
-- made for every row of a batch once any of its ARKs might have been among the run's earlier
-- ones, which in a long run is nearly every batch; now the loader marks the rows whose ARK might
-- have been (ark_update_stage.check_run) and only those are looked up.
--
-- ark_update_verdict is the function's own (no role but the owner reads or writes it): unlogged,
-- written and emptied in the batch's transaction, and on Citus distributed by the ARK and
-- co-located with ark and the stage, so every statement still runs shard by shard.

do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    end if;
end $$;

alter table ark_update_stage add column check_run boolean not null default false;

comment on column ark_update_stage.check_run is
    'The row''s ARK may have been changed by an earlier batch of the same run: ark_update_apply looks up the run''s receipts for it (with p_check_run).';

create unlogged table ark_update_verdict (
    token         bigint not null,
    ark           varchar(272) not null collate "C",
    idx           integer not null,
    request_id    varchar(255) not null collate "C",
    digest        bytea not null,
    mask          integer not null,
    check_run     boolean not null,
    -- the rule that settled the row: 1 unknown ARK, 2 receipt, 3 named twice, 4 status,
    -- 5 reach, 6 none (changed or unchanged)
    rule_no       smallint not null,
    outcome       text not null,
    detail        text,
    shoulder_id   bigint,
    -- the row's new values (mask bits 1 to 16: the staged value, NULL for an empty one), and the
    -- ARK_CHANGE row of a change
    erc_who       text,
    erc_what      text,
    erc_when      text,
    commitment    text,
    seq           integer,
    action        text,
    before_url    text,
    after_url     text,
    before_status text,
    after_status  text,
    after_reason  text,
    reason        text,
    before_erc    jsonb,
    after_erc     jsonb,
    primary key (token, ark)
);

comment on table ark_update_verdict is
    'The verdicts of the staged change rows of bulk changes in flight, written and consumed by ark_update_apply in the same transaction; empty between batches.';

do $$
begin
    if arkhe_layout() = 'citus' then
        perform create_distributed_table('ark_update_verdict', 'ark', colocate_with => 'ark');
    end if;
end $$;

-- As in 0017, a status is read with a CASE (not ark_status_text) and messages are built with ||;
-- the CASE of a lateral subquery is a searched one: Citus deparses the simple form there wrongly.
-- The mask bits: 1 url, 2 erc_who, 4 erc_what, 8 erc_when, 16 commitment, 32 status, 64 reason.
-- ark_update_apply's contract is 0017's, but for p_check_run: with it the rows marked
-- check_run are looked up among the receipts of run p_run (without it none is).
create or replace function ark_update_apply(p_token bigint, p_run bigint, p_check_run boolean, p_by_client bigint, p_by_text text,
                                 p_at timestamptz default now())
returns table (idx integer, outcome text, detail text)
language plpgsql security definer as $$
declare r record; refusal text;
begin
    if arkhe_layout() = 'single' then
        -- ARK order: concurrent runs over overlapping manifests never deadlock
        perform 1 from ark a where a.ark in (select s.ark from ark_update_stage s where s.token = p_token)
        order by a.ark for update of a;
    end if;
    -- every rule but reach and the row's change, in one pass: the staged row, its ark row (c: the
    -- status it stands for; n: the values after the change) and its receipt
    insert into ark_update_verdict (token, ark, idx, request_id, digest, mask, check_run, rule_no, outcome, detail, shoulder_id,
                                    erc_who, erc_what, erc_when, commitment, seq, action, before_url, after_url,
                                    before_status, after_status, after_reason, reason, before_erc, after_erc)
    select s.token, s.ark, s.idx, s.request_id, s.digest, s.mask, s.check_run,
           case when a.ark is null then 1 when u.ark is not null then 2 when t.refused then 4 else 6 end,
           case when a.ark is null then 'unknown'
                when u.ark is not null then case when u.digest = s.digest then 'earlier' else 'refused' end
                when t.refused then 'refused'
                when (s.mask & 1 = 0 or a.url is not distinct from nullif(s.url, ''))
                 and (s.mask & 2 = 0 or a.erc_who is not distinct from nullif(s.erc_who, ''))
                 and (s.mask & 4 = 0 or a.erc_what is not distinct from nullif(s.erc_what, ''))
                 and (s.mask & 8 = 0 or a.erc_when is not distinct from nullif(s.erc_when, ''))
                 and (s.mask & 16 = 0 or a.commitment is not distinct from nullif(s.commitment, ''))
                 and (s.mask & 32 = 0 or c.status = s.status)
                 and (s.mask & 64 = 0 or c.status <> 'unavailable' or s.status = 'public'
                      or a.tombstone_reason is not distinct from nullif(s.reason, ''))
                then 'unchanged' else 'changed' end,
           case when a.ark is null then 'ARK ' || s.ark::text || ' is not in the ledger'
                when u.ark is not null then
                     case when u.digest = s.digest then null
                          else 'change request ID ' || s.request_id::text || ' was applied to ARK ' || s.ark::text || ' earlier with other values' end
                when t.refused then
                     case when s.status not in ('public', 'unavailable', 'reserved') then
                               'status ' || s.status || ' of ARK ' || s.ark::text || ': want public or unavailable'
                          when s.status = 'reserved' and c.status <> 'reserved' then
                               'ARK ' || s.ark::text || ': status ' || c.status || ' never returns to reserved (a published name cannot be unpublished)'
                          else 'ARK ' || s.ark::text || ': a tombstone needs a reason' end end,
           a.shoulder_id,
           nullif(s.erc_who, ''), nullif(s.erc_what, ''), nullif(s.erc_when, ''), nullif(s.commitment, ''),
           coalesce(a.change_seq, 0) + 1,
           case when n.status = 'unavailable' and c.status <> 'unavailable' then 'tombstone'
                when n.status <> c.status then 'restore'
                when n.url is distinct from a.url then 'update'
                else 'metadata' end,
           a.url, n.url, c.status, n.status, n.tombstone_reason, nullif(s.reason, ''),
           case when e.erc then jsonb_build_object('who', a.erc_who, 'what', a.erc_what, 'when', a.erc_when,
                                                   'commitment', a.commitment, 'tombstone_reason', a.tombstone_reason) end,
           case when e.erc then jsonb_build_object('who', n.who, 'what', n.what, 'when', n.when_, 'commitment', n.commitment,
                                                   'tombstone_reason', n.tombstone_reason) end
    from ark_update_stage s
         left join ark a on a.ark = s.ark
         left join update_receipt u on u.ark = s.ark and u.client_pk = p_by_client and u.request_id = s.request_id,
         lateral (select case when a.status = 'unavailable' then 'unavailable' when a.status = 'reserved' then 'reserved' else 'public' end as status) c,
         lateral (select s.mask & 32 <> 0
                         and (s.status not in ('public', 'unavailable', 'reserved')
                              or (s.status = 'reserved' and c.status <> 'reserved')
                              or (s.status = 'unavailable' and c.status <> 'unavailable'
                                  and coalesce(case when s.mask & 64 <> 0 then s.reason else null end, '') = '')) as refused) t,
         lateral (select case when s.mask & 1 <> 0 then nullif(s.url, '') else a.url end as url,
                         case when s.mask & 2 <> 0 then nullif(s.erc_who, '') else a.erc_who end as who,
                         case when s.mask & 4 <> 0 then nullif(s.erc_what, '') else a.erc_what end as what,
                         case when s.mask & 8 <> 0 then nullif(s.erc_when, '') else a.erc_when end as when_,
                         case when s.mask & 16 <> 0 then nullif(s.commitment, '') else a.commitment end as commitment,
                         case when s.mask & 32 <> 0 then s.status else c.status end as status,
                         case when (case when s.mask & 32 <> 0 then s.status else c.status end) <> 'unavailable' then null
                              when s.mask & 64 <> 0 then nullif(s.reason, '')
                              else a.tombstone_reason end as tombstone_reason) n,
         lateral (select (a.erc_who, a.erc_what, a.erc_when, a.commitment, a.tombstone_reason)
                         is distinct from (n.who, n.what, n.when_, n.commitment, n.tombstone_reason) as erc) e
    where s.token = p_token;
    -- an ARK changed earlier in the same run by another change row: the manifest named it twice
    -- (this rule comes before the status rules); looked up for the rows marked check_run
    if p_check_run then
    update ark_update_verdict v set rule_no = 3, outcome = 'refused',
           detail = 'ARK ' || v.ark::text || ' is named twice in the manifest with different values (the earlier row was applied as change request ' || u.request_id::text || ')'
    from update_receipt u
    where v.token = p_token and v.check_run and v.rule_no >= 4
      and u.ark = v.ark and u.client_pk = p_by_client and u.run = p_run and u.request_id <> v.request_id;
    end if;
    -- reach, per shoulder and scope, with the single change's rule and message
    for r in select v.shoulder_id, (v.mask & 32 <> 0) as st, min(v.ark) as first
             from ark_update_verdict v
             where v.token = p_token and v.rule_no = 6
             group by v.shoulder_id, (v.mask & 32 <> 0) loop
        refusal := null;
        begin
            perform arkhe_check_actor(p_by_client, case when r.st then 'ark:tombstone' else 'ark:update' end,
                                      r.shoulder_id, r.first, 'update');
        exception when sqlstate 'AK004' or sqlstate 'AK006' then
            refusal := sqlerrm;
        end;
        if refusal is not null then
            update ark_update_verdict v set rule_no = 5, outcome = 'refused', detail = refusal
            where v.token = p_token and v.rule_no = 6
              and v.shoulder_id = r.shoulder_id and (v.mask & 32 <> 0) = r.st;
        end if;
    end loop;
    -- one ARK_CHANGE row per changed ARK, then the ark rows (checked against it by ark_update)
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text)
    select v.ark, v.seq, p_at, v.action, v.before_url, v.after_url, v.before_status, v.after_status, v.reason,
           v.before_erc, v.after_erc, p_by_client, p_by_text
    from ark_update_verdict v
    where v.token = p_token and v.outcome = 'changed';
    update ark a set url = v.after_url,
                     erc_who = case when v.mask & 2 <> 0 then v.erc_who else a.erc_who end,
                     erc_what = case when v.mask & 4 <> 0 then v.erc_what else a.erc_what end,
                     erc_when = case when v.mask & 8 <> 0 then v.erc_when else a.erc_when end,
                     commitment = case when v.mask & 16 <> 0 then v.commitment else a.commitment end,
                     status = case when v.mask & 32 <> 0 then (case v.after_status when 'unavailable' then 'unavailable'::ark_status when 'reserved' then 'reserved'::ark_status end) else a.status end,
                     tombstone_reason = v.after_reason,
                     tombstoned_at = case when v.after_status <> 'unavailable' then null
                                          when v.before_status = 'unavailable' then a.tombstoned_at
                                          else p_at end,
                     updated_at = p_at, updated_by = p_by_client,
                     change_seq = coalesce(a.change_seq, 0) + 1
    from ark_update_verdict v
    where v.token = p_token and v.outcome = 'changed' and a.ark = v.ark;
    -- on one node the locks keep a concurrent run off these ARKs until this one commits, and it
    -- then finds these receipts, so no receipt can be there already; on Citus one may be
    if arkhe_layout() = 'single' then
        insert into update_receipt (ark, client_pk, request_id, digest, applied_at, change_seq, run)
        select v.ark, p_by_client, v.request_id, v.digest, p_at, case when v.outcome = 'changed' then v.seq end, p_run
        from ark_update_verdict v
        where v.token = p_token and v.outcome in ('changed', 'unchanged');
    else
        insert into update_receipt (ark, client_pk, request_id, digest, applied_at, change_seq, run)
        select v.ark, p_by_client, v.request_id, v.digest, p_at, case when v.outcome = 'changed' then v.seq end, p_run
        from ark_update_verdict v
        where v.token = p_token and v.outcome in ('changed', 'unchanged')
        on conflict do nothing;
    end if;
    return query select v.idx, v.outcome, v.detail from ark_update_verdict v where v.token = p_token;
    delete from ark_update_stage s where s.token = p_token;
    delete from ark_update_verdict v where v.token = p_token;
end $$;

do $$
begin
    execute format('alter function ark_update_apply(bigint, bigint, boolean, bigint, text, timestamptz) set search_path = %I, pg_temp',
                   current_schema());
end $$;
