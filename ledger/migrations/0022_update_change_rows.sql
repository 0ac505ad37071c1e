-- arkhe ledger, version 22: a bulk change writes the ARK_CHANGE row a single change writes.
--
-- ark_update_apply (migration 0017) wrote before_erc and after_erc, the ERC description before
-- and after, on every ARK_CHANGE row it appended, a repoint included; ark_repoint writes them on
-- none. Now they are written when the change changes the description (who, what, when,
-- commitment or the tombstone's reason) and are NULL otherwise, as for a single repoint, so a
-- bulk repoint's rows are those of single repoints and the ARK_CHANGE table does not carry two
-- copies of every description a repoint did not touch. And the outcomes unchanged and changed
-- are set in one pass over the batch's staged rows instead of two. Nothing else changes: the
-- order of the locks, the rules, the reach check, the receipts and the results are 0017's. The
-- function keeps its signature, so its owner and grants stay.

create or replace function ark_update_apply(p_token bigint, p_run bigint, p_check_run boolean, p_by_client bigint, p_by_text text,
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
    -- unchanged and changed rows, in one pass
    update ark_update_stage s set outcome = case when
          (s.mask & 1 = 0 or a.url is not distinct from nullif(s.url, ''))
      and (s.mask & 2 = 0 or a.erc_who is not distinct from nullif(s.erc_who, ''))
      and (s.mask & 4 = 0 or a.erc_what is not distinct from nullif(s.erc_what, ''))
      and (s.mask & 8 = 0 or a.erc_when is not distinct from nullif(s.erc_when, ''))
      and (s.mask & 16 = 0 or a.commitment is not distinct from nullif(s.commitment, ''))
      and (s.mask & 32 = 0 or (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) = s.status)
      and (s.mask & 64 = 0 or (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'unavailable' or s.status = 'public'
           or a.tombstone_reason is not distinct from nullif(s.reason, ''))
        then 'unchanged' else 'changed' end
    from ark a
    where s.token = p_token and s.outcome is null and a.ark = s.ark;
    -- one ARK_CHANGE row per changed ARK, then the ark rows (checked against it by ark_update)
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text)
    select a.ark, coalesce(a.change_seq, 0) + 1, p_at,
           case when n.status = 'unavailable' and (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) <> 'unavailable' then 'tombstone'
                when n.status <> (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end) then 'restore'
                when n.url is distinct from a.url then 'update'
                else 'metadata' end,
           a.url, n.url, (case a.status when 'unavailable' then 'unavailable' when 'reserved' then 'reserved' else 'public' end), n.status, nullif(s.reason, ''),
           case when e.erc then jsonb_build_object('who', a.erc_who, 'what', a.erc_what, 'when', a.erc_when,
                                                   'commitment', a.commitment, 'tombstone_reason', a.tombstone_reason) end,
           case when e.erc then jsonb_build_object('who', n.who, 'what', n.what, 'when', n.when_, 'commitment', n.commitment,
                                                   'tombstone_reason', n.tombstone_reason) end,
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
                              else a.tombstone_reason end as tombstone_reason) n,
         lateral (select (a.erc_who, a.erc_what, a.erc_when, a.commitment, a.tombstone_reason)
                         is distinct from (n.who, n.what, n.when_, n.commitment, n.tombstone_reason) as erc) e
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

do $$
begin
    execute format('alter function ark_update_apply(bigint, bigint, boolean, bigint, text, timestamptz) set search_path = %I, pg_temp',
                   current_schema());
end $$;
