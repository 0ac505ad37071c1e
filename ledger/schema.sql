-- The ledger's schema as the migrations in migrations/ leave it on a single node: every
-- table, index, constraint, function and trigger in its current definition, in one file.
-- GENERATED: do not edit. The migrations are the source (forward-only and checksummed);
-- this file is pg_dump --schema-only --no-owner --no-privileges of a freshly migrated
-- database, without the lines that vary from run to run (server and pg_dump versions,
-- SET lines, \restrict keys). go test ./ledger fails when it is stale; regenerate it with
--   go test ./ledger -run TestSchemaFile -update
-- On Citus the same migrations distribute ark and ark_change by the ARK, keep receipts in
-- the receipt table and make the registration tables reference tables.
-- Dumped by the pg_dump of PostgreSQL 15.

--
-- Name: ark_status; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.ark_status AS ENUM (
    'public',
    'reserved',
    'unavailable'
);

--
-- Name: ark_apply_export(text, text, text, text, text, text, text, text, jsonb, bigint, text, bigint, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_apply_export(p_ark text, p_url text, p_status text, p_reason text, p_who text, p_what text, p_when text, p_commitment text, p_metadata jsonb, p_by_client bigint, p_by_text text, p_import_run bigint, p_at timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: ark_mint_draw(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb, boolean, boolean); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_mint_draw(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, p_tally boolean, p_citus boolean, OUT ark text, OUT replayed boolean, OUT collisions integer, OUT tally_manager_id bigint, OUT owed boolean) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    k record; s record; c record; got text; prior record; key text; q integer; used bigint; today date;
    now_ timestamptz := now(); citus boolean := p_citus;
begin
    replayed := false;
    collisions := 0;
    owed := false;
    if p_request_id is null or p_digest is null then
        raise exception using errcode = '22004',
            message = 'a single mint needs a request ID and a payload digest: every ARK arkhe mints has its receipt';
    end if;
    select id, client_id, authority into c from client where client_id = p_client_id;
    if not found then
        raise exception using errcode = 'AK004', message = format('mint refused: client %s is not registered', p_client_id);
    end if;
    if p_prefix is not null then
        select cr.client_pk, cr.active, cr.locked_until into k
          from credential cr where cr.prefix = p_prefix and cr.kind = 'api_key';
        if not found or k.client_pk <> c.id then
            raise exception using errcode = 'AK020', message = format('API key %s is not a key of client %s', p_prefix, p_client_id);
        elsif not k.active then
            raise exception using errcode = 'AK020', message = format('API key %s was revoked', p_prefix);
        elsif k.locked_until is not null and k.locked_until > now_ then
            raise exception using errcode = 'AK020',
                message = format('API key %s is locked until %s after too many wrong attempts', p_prefix, k.locked_until);
        end if;
    end if;
    if p_request_id is not null then
        if citus then
            select r.ark, r.payload_digest into prior from receipt r
             where r.client_pk = c.id and r.request_id = p_request_id;
        else
            select a.ark, a.payload_digest into prior from ark a
             where a.created_by = c.id and a.request_id = p_request_id and a.request_id is not null;
        end if;
        if prior.ark is not null then
            if substring(p_digest from 1 for length(prior.payload_digest)) is distinct from prior.payload_digest then
                raise exception using errcode = 'AK022',
                    message = format('request ID %s of client %s was used for another payload (it minted ark:%s)', p_request_id, c.client_id, prior.ark);
            end if;
            ark := prior.ark;
            replayed := true;
            return;
        end if;
    end if;
    select id, naan, shoulder, manager_id into s from shoulder where id = p_shoulder_id;
    if not found then
        raise exception using errcode = '23503', message = format('shoulder id %s is not registered', p_shoulder_id);
    end if;
    perform arkhe_check_actor(c.id, 'ark:mint', s.id, s.naan || s.shoulder, 'mint');
    foreach got in array coalesce(p_names, '{}') loop
        key := s.naan || '/' || got;
        if citus then
            if exists (select 1 from ark a where a.ark = key) then
                collisions := collisions + 1;
                continue;
            end if;
            if p_request_id is not null then
                insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
                values (c.id, p_request_id, key, p_digest, now_) on conflict do nothing;
                if not found then
                    -- a concurrent request with this request ID committed first
                    select r.ark, r.payload_digest into prior from receipt r
                     where r.client_pk = c.id and r.request_id = p_request_id;
                    if substring(p_digest from 1 for length(prior.payload_digest)) is distinct from prior.payload_digest then
                        raise exception using errcode = 'AK022',
                            message = format('request ID %s of client %s was used for another payload (it minted ark:%s)', p_request_id, c.client_id, prior.ark);
                    end if;
                    ark := prior.ark;
                    replayed := true;
                    return;
                end if;
            end if;
            insert into ark (ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when,
                             metadata, created_at, created_by)
            values (key, s.naan, s.id, got, p_url, p_commitment, p_who, p_what, p_when, p_metadata, now_, c.id);
            ark := key;
            exit;
        end if;
        insert into ark (ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when,
                         metadata, created_at, created_by, request_id, payload_digest)
        values (key, s.naan, s.id, got, p_url, p_commitment, p_who, p_what, p_when, p_metadata, now_, c.id,
                p_request_id, case when p_request_id is not null then p_digest end)
        on conflict do nothing;
        if found then
            ark := key;
            exit;
        end if;
        if p_request_id is not null then
            -- the conflict may be the receipt's: a concurrent request with this request ID
            select a.ark, a.payload_digest into prior from ark a
             where a.created_by = c.id and a.request_id = p_request_id and a.request_id is not null;
            if prior.ark is not null then
                if substring(p_digest from 1 for length(prior.payload_digest)) is distinct from prior.payload_digest then
                    raise exception using errcode = 'AK022',
                        message = format('request ID %s of client %s was used for another payload (it minted ark:%s)', p_request_id, c.client_id, prior.ark);
                end if;
                ark := prior.ark;
                replayed := true;
                return;
            end if;
        end if;
        collisions := collisions + 1;
    end loop;
    if ark is null then
        raise exception using errcode = 'AK023',
            message = format('gave up minting in shoulder %s of NAAN %s after %s collision(s)', s.shoulder, s.naan, collisions);
    end if;
    today := (now_ at time zone 'utc')::date;
    if s.manager_id is not null then
        select quota_per_day into q from manager where id = s.manager_id;
    end if;
    if q is not null then
        insert into shoulder_tally as t (shoulder_id, draws, collisions) values (s.id, collisions + 1, collisions)
        on conflict (shoulder_id) do update set draws = t.draws + excluded.draws, collisions = t.collisions + excluded.collisions;
        insert into mint_quota as m (manager_id, day, minted) values (s.manager_id, today, 1)
        on conflict (manager_id, day) do update set minted = m.minted + 1
        returning m.minted into used;
        used := used + coalesce((select count(*) from mint_one_tally t where t.manager_id = s.manager_id and t.day = today), 0);
        if used > q then
            raise exception using errcode = 'AK021',
                message = format('mint refused: the daily quota of %s new ARKs of the manager of shoulder %s of NAAN %s is used up today (UTC)', q, s.shoulder, s.naan);
        end if;
    elsif p_tally then
        insert into mint_one_tally (shoulder_id, manager_id, day, draws, collisions)
        values (s.id, s.manager_id, today, collisions + 1, collisions);
        perform arkhe_fold_mint_one_tally();
    else
        tally_manager_id := s.manager_id;
        owed := true;
    end if;
    insert into audit_event (client_id, authority, action, target, detail)
    values (c.client_id, c.authority, 'ark.mint', 'ark:' || ark,
            jsonb_build_object('request_id', p_request_id, 'key', p_prefix, 'collisions', collisions));
end $$;

--
-- Name: FUNCTION ark_mint_draw(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, p_tally boolean, p_citus boolean, OUT ark text, OUT replayed boolean, OUT collisions integer, OUT tally_manager_id bigint, OUT owed boolean); Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON FUNCTION public.ark_mint_draw(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, p_tally boolean, p_citus boolean, OUT ark text, OUT replayed boolean, OUT collisions integer, OUT tally_manager_id bigint, OUT owed boolean) IS 'The mint of ark_mint_one and of each element of ark_mint_many; with p_tally false, the counts of a shoulder without a quota are left to the caller (owed).';

--
-- Name: ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_mint_many(p_client_id text, p_prefix text, p_request_ids text[], p_digests bytea[], p_shoulder_ids bigint[], p_names text[], p_name_counts integer[], p_urls text[], p_commitments text[], p_whos text[], p_whats text[], p_whens text[], p_metadatas jsonb[]) RETURNS TABLE(ord integer, ark text, replayed boolean, collisions integer, code text, message text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    n integer := coalesce(cardinality(p_request_ids), 0);
    i integer; off integer := 0; d record;
    t_sh bigint[] := '{}'; t_mg bigint[] := '{}'; t_col integer[] := '{}'; citus boolean := arkhe_layout() = 'citus';
begin
    if n < 1 or n > 64 then
        raise exception using errcode = '22023', message = format('ark_mint_many takes from 1 to 64 mints, not %s', n);
    end if;
    if coalesce(cardinality(p_digests), 0) <> n or coalesce(cardinality(p_shoulder_ids), 0) <> n
       or coalesce(cardinality(p_name_counts), 0) <> n or coalesce(cardinality(p_urls), 0) <> n
       or coalesce(cardinality(p_commitments), 0) <> n or coalesce(cardinality(p_whos), 0) <> n
       or coalesce(cardinality(p_whats), 0) <> n or coalesce(cardinality(p_whens), 0) <> n
       or coalesce(cardinality(p_metadatas), 0) <> n then
        raise exception using errcode = '22023', message = format('ark_mint_many: every array must have the %s elements of p_request_ids', n);
    end if;
    for i in 1 .. n loop
        ord := i;
        ark := null;
        replayed := false;
        collisions := 0;
        code := null;
        message := null;
        begin
            select * into d from ark_mint_draw(p_client_id, p_prefix, p_request_ids[i], p_digests[i], p_shoulder_ids[i],
                                               p_names[off + 1 : off + p_name_counts[i]], p_urls[i], p_commitments[i], p_whos[i],
                                               p_whats[i], p_whens[i], p_metadatas[i], false, citus);
            ark := d.ark;
            replayed := d.replayed;
            collisions := d.collisions;
            if d.owed then
                t_sh := array_append(t_sh, p_shoulder_ids[i]);
                t_mg := array_append(t_mg, d.tally_manager_id);
                t_col := array_append(t_col, d.collisions);
            end if;
        exception when others then
            code := sqlstate;
            message := sqlerrm;
        end;
        off := off + coalesce(p_name_counts[i], 0);
        return next;
    end loop;
    if cardinality(t_sh) > 0 then
        insert into mint_one_tally (shoulder_id, manager_id, day, draws, collisions)
        select u.s, u.m, (now() at time zone 'utc')::date, u.c + 1, u.c from unnest(t_sh, t_mg, t_col) as u(s, m, c);
        perform arkhe_fold_mint_one_tally();
    end if;
end $$;

--
-- Name: FUNCTION ark_mint_many(p_client_id text, p_prefix text, p_request_ids text[], p_digests bytea[], p_shoulder_ids bigint[], p_names text[], p_name_counts integer[], p_urls text[], p_commitments text[], p_whos text[], p_whats text[], p_whens text[], p_metadatas jsonb[]); Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON FUNCTION public.ark_mint_many(p_client_id text, p_prefix text, p_request_ids text[], p_digests bytea[], p_shoulder_ids bigint[], p_names text[], p_name_counts integer[], p_urls text[], p_commitments text[], p_whos text[], p_whats text[], p_whens text[], p_metadatas jsonb[]) IS 'Mints up to 64 ARKs of client p_client_id in one statement, each as ark_mint_one would in a block of its own: one row per element, its ARK or its refusal.';

--
-- Name: ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_mint_one(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, OUT ark text, OUT replayed boolean, OUT collisions integer) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare d record;
begin
    select * into d from ark_mint_draw(p_client_id, p_prefix, p_request_id, p_digest, p_shoulder_id, p_names, p_url, p_commitment,
                                       p_who, p_what, p_when, p_metadata, true, arkhe_layout() = 'citus');
    ark := d.ark;
    replayed := d.replayed;
    collisions := d.collisions;
end $$;

--
-- Name: FUNCTION ark_mint_one(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, OUT ark text, OUT replayed boolean, OUT collisions integer); Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON FUNCTION public.ark_mint_one(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[], p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, OUT ark text, OUT replayed boolean, OUT collisions integer) IS 'Mints one ARK, insert-only, for client p_client_id (with its API key p_prefix, if named): receipt, reach, counters, quota and audit event in one statement.';

--
-- Name: ark_repoint(text, text, bigint, text, timestamp with time zone, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_repoint(p_ark text, p_url text, p_by_client bigint, p_by_text text, p_at timestamp with time zone DEFAULT now(), p_import_run bigint DEFAULT NULL::bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: ark_status_text(public.ark_status); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_status_text(p_status public.ark_status) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    select coalesce(p_status::text, 'public')
$$;

--
-- Name: ark_tombstone(text, text, bigint, text, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_tombstone(p_ark text, p_reason text, p_by_client bigint, p_by_text text, p_at timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: ark_update_apply(bigint, bigint, boolean, bigint, text, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ark_update_apply(p_token bigint, p_run bigint, p_check_run boolean, p_by_client bigint, p_by_text text, p_at timestamp with time zone DEFAULT now()) RETURNS TABLE(idx integer, outcome text, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: arkhe_ark_keyed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_ark_keyed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare me bigint; c bigint; what text; cid text; t text := regexp_replace(tg_table_name, '_[0-9]+$', '');
begin
    if not arkhe_keys_required() then
        return null;
    end if;
    me := arkhe_session_client();
    if t = 'ark' then
        what := 'insert of ARKs';
        for c in select distinct n.created_by from new_arks n loop
            if c is null and arkhe_registrar() then
                continue;
            end if;
            if c is distinct from me then
                select client_id into cid from client where id = c;
                raise exception using errcode = 'AK009',
                    message = format('%s refused: this ledger requires the API key of the client a write acts as (%s), and this session has not proved it (arkhe_key_login)',
                                     what, coalesce('client ' || cid, 'none named; only the operator role writes without a client'));
            end if;
        end loop;
    else
        what := 'change of ARKs';
        for c in select distinct n.by_client from new_changes n loop
            if c is null and arkhe_registrar() then
                continue;
            end if;
            if c is distinct from me then
                select client_id into cid from client where id = c;
                raise exception using errcode = 'AK009',
                    message = format('%s refused: this ledger requires the API key of the client a write acts as (%s), and this session has not proved it (arkhe_key_login)',
                                     what, coalesce('client ' || cid, 'none named; only the operator role writes without a client'));
            end if;
        end loop;
    end if;
    return null;
end $_$;

--
-- Name: arkhe_ark_reach(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_ark_reach() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare
    sh bigint[]; cb bigint[]; na text[]; mi boolean[]; a text;
    c record; s record; cm record; sm record; code text; fmt text; args text[];
begin
    select array_agg(g.shoulder_id), array_agg(g.created_by), array_agg(g.naan), array_agg(g.minted)
      into sh, cb, na, mi
      from (select n.shoulder_id, n.created_by, n.naan, n.import_run_id is null as minted
              from new_arks n
             group by n.shoulder_id, n.created_by, n.naan, n.import_run_id is null) g;
    for i in 1 .. coalesce(array_length(sh, 1), 0) loop
        if not exists (select 1 from shoulder where id = sh[i] and naan = na[i]) then
            select n.ark into a from new_arks n where n.shoulder_id = sh[i] and n.naan = na[i] limit 1;
            raise exception using errcode = '23503',
                message = format('ARK %s refused: shoulder id %s of NAAN %s is not registered; every ARK belongs to a registered shoulder of its own NAAN',
                                 a, sh[i], na[i]);
        end if;
    end loop;
    for i in 1 .. coalesce(array_length(sh, 1), 0) loop
        -- an imported ARK without a client is the registrar's (the import run's checks)
        continue when not mi[i] and cb[i] is null;
        select id, status, shoulder, naan, manager_id into s from shoulder where id = sh[i];
        select id, client_id, active, expires_at, allowed_scopes, shoulder_id, authority, naan, manager_id, db_role
          into c from client where id = cb[i];
        select name, active into cm from manager where id = c.manager_id;
        -- a refusal's message: fmt, whose %1$s is the ARK (looked up below), and its other values
        code := null;
        if c.db_role is not null and not arkhe_session_in(c.db_role) then
            code := 'AK006';
            fmt := '%2$s of %1$s refused: client %3$s is bound to database role %4$s, and this session''s login role %5$s is not a member of it';
            args := array[case when mi[i] then 'mint' else 'import' end, c.client_id, c.db_role, session_user::text];
        elsif not mi[i] then
            if c.id is null or not c.active or (c.expires_at is not null and c.expires_at <= now())
               or not ('ark:import' = any (c.allowed_scopes)) then
                code := 'AK004';
                fmt := 'import of %1$s refused: client %2$s must be active and hold scope ark:import';
                args := array[c.client_id];
            elsif cm.active is false then
                code := 'AK004';
                fmt := 'import of %1$s refused: client %2$s acts for manager %3$s, which is no longer active (departed, succeeded or set inactive)';
                args := array[c.client_id, cm.name];
            end if;
        elsif c.id is null or not c.active
           or (c.expires_at is not null and c.expires_at <= now())
           or not ('ark:mint' = any (c.allowed_scopes))
           or s.status is distinct from 'active'
           or (c.shoulder_id is not null and c.shoulder_id <> s.id)
           -- a shoulder without a manager is outside every manager's reach (no NULL slips through)
           or not coalesce(   c.authority = 'system'
                           or (c.authority = 'naan' and c.naan = s.naan)
                           or (c.authority = 'manager' and c.manager_id = s.manager_id), false) then
            code := 'AK004';
            fmt := 'mint of %1$s refused: client %2$s may not mint in shoulder %3$s (status %4$s) of NAAN %5$s; reach comes from the client''s registration only';
            args := array[coalesce(c.client_id, '(none)'), s.shoulder::text, s.status::text, na[i]];
        elsif cm.active is false then
            code := 'AK004';
            fmt := 'mint of %1$s refused: client %2$s acts for manager %3$s, which is no longer active (departed, succeeded or set inactive)';
            args := array[c.client_id, cm.name];
        else
            select name, active into sm from manager where id = s.manager_id;
            if sm.active is false then
                code := 'AK004';
                fmt := 'mint of %1$s refused: shoulder %2$s of NAAN %3$s is held by manager %4$s, which is no longer active (departed, succeeded or set inactive); the shoulder keeps its ARKs and mints again once an active manager holds it';
                args := array[s.shoulder, na[i], sm.name];
            end if;
        end if;
        if code is not null then
            select min(n.ark) into a from new_arks n
             where n.shoulder_id = sh[i] and n.created_by is not distinct from cb[i] and n.naan = na[i]
               and (n.import_run_id is null) = mi[i];
            raise exception using errcode = code, message = format(fmt, variadic array_prepend(a, args));
        end if;
    end loop;
    return null;
end $_$;

--
-- Name: arkhe_ark_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_ark_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: arkhe_audit_actor(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_audit_actor() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    if tg_table_name <> 'audit_event' then
        return new;
    end if;
    new.db_role := session_user;
    new.at := now();
    new.os_user := coalesce(new.os_user, nullif(current_setting('arkhe.os_user', true), ''));
    return new;
end $$;

--
-- Name: arkhe_audit_registration(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_audit_registration() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare
    t text := tg_table_name;
    a jsonb; b jsonb; ch text[]; act text; tgt text;
    rehashed boolean := tg_op = 'UPDATE' and (to_jsonb(new)->>'hashed') is distinct from (to_jsonb(old)->>'hashed');
begin
    if t not in ('naan', 'manager', 'shoulder', 'client', 'credential') then
        -- a Citus placement (t_102008): recorded once, by the initiating session's own placement
        if arkhe_layout() is distinct from 'citus' or not arkhe_initiating_placement() then
            return null;
        end if;
        t := regexp_replace(t, '_[0-9]+$', '');
        -- credential rows are left out: Citus cannot write another reference table from a
        -- credential placement (its foreign key to client holds the placement connections)
        if t not in ('naan', 'manager', 'shoulder', 'client') then
            return null;
        end if;
    end if;
    a := arkhe_audit_row(t, to_jsonb(new));
    if tg_op = 'UPDATE' then
        b := arkhe_audit_row(t, to_jsonb(old));
        select array_agg(n.key order by n.key) into ch from jsonb_each(a) n where n.value is distinct from b->n.key;
        if rehashed then
            -- the hash itself is never recorded: only that it was replaced
            ch := coalesce(ch, '{}') || array['hashed'];
            a := a || '{"hashed": "replaced"}';
        end if;
        if ch is null then
            return null;
        end if;
        select jsonb_object_agg(k, b->k), jsonb_object_agg(k, a->k) into b, a from unnest(ch) k;
    end if;
    act := case t
        when 'naan' then case when tg_op = 'INSERT' then 'naan.add' else 'naan.set' end
        when 'manager' then case
            when tg_op = 'INSERT' then 'manager.add'
            when 'succeeded_by' = any (ch) then 'manager.succeed'
            when 'departed_at' = any (ch) then 'manager.depart'
            when ch = array['active'] then case when (a->>'active')::boolean then 'manager.enable' else 'manager.disable' end
            else 'manager.set' end
        when 'shoulder' then case
            when tg_op = 'INSERT' then 'shoulder.add'
            when 'status' = any (ch) and a->>'status' = 'retired' then 'shoulder.retire'
            else 'shoulder.set' end
        when 'client' then case
            when tg_op = 'INSERT' then 'client.add'
            when ch = array['active'] then case when (a->>'active')::boolean then 'client.enable' else 'client.disable' end
            else 'client.set' end
        else case
            when tg_op = 'INSERT' then 'key.create'
            when 'active' = any (ch) and not (a->>'active')::boolean then 'key.revoke'
            when 'hashed' = any (ch) then 'key.rehash'
            when 'locked_until' = any (ch) and a->>'locked_until' is not null then 'key.lock'
            when 'failed_attempts' = any (ch) and (a->>'failed_attempts')::int > (b->>'failed_attempts')::int then 'key.fail'
            else null end
        end;
    if act is null then
        return null;
    end if;
    tgt := case t
        when 'naan' then to_jsonb(new)->>'naan'
        when 'manager' then (to_jsonb(new)->>'naan') || ' ' || (to_jsonb(new)->>'name')
        when 'shoulder' then 'ark:' || (to_jsonb(new)->>'naan') || (to_jsonb(new)->>'shoulder')
        when 'client' then to_jsonb(new)->>'client_id'
        else to_jsonb(new)->>'prefix' end;
    if t = 'credential' and tg_op = 'UPDATE' then
        a := a || jsonb_build_object('client', (select client_id from client where id = (to_jsonb(new)->>'client_pk')::bigint));
    end if;
    insert into audit_event (action, target, detail)
    values (act, tgt, jsonb_build_object('before', b, 'after', a));
    return null;
end $_$;

--
-- Name: arkhe_audit_row(text, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_audit_row(p_table text, r jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    r := r - 'id' - 'import_run_id' - 'hashed' - 'last_used_at' - 'created_at';
    if r ? 'manager_id' then
        r := (r - 'manager_id') || jsonb_build_object('manager', (select name from manager where id = (r->>'manager_id')::bigint));
    end if;
    if r ? 'default_shoulder_id' then
        r := (r - 'default_shoulder_id') || jsonb_build_object('default_shoulder', (select shoulder from shoulder where id = (r->>'default_shoulder_id')::bigint));
    end if;
    if r ? 'succeeded_by_id' then
        r := (r - 'succeeded_by_id') || jsonb_build_object('succeeded_by', (select name from manager where id = (r->>'succeeded_by_id')::bigint));
    end if;
    if r ? 'shoulder_id' then
        r := (r - 'shoulder_id') || jsonb_build_object('shoulder', (select shoulder from shoulder where id = (r->>'shoulder_id')::bigint));
    end if;
    if r ? 'client_pk' then
        r := (r - 'client_pk') || jsonb_build_object('client', (select client_id from client where id = (r->>'client_pk')::bigint));
    end if;
    return r;
end $$;

--
-- Name: arkhe_check_actor(bigint, text, bigint, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_check_actor(p_client bigint, p_scope text, p_shoulder bigint, p_ark text, p_what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare c record; s record; cm record;
begin
    if p_client is null then
        if arkhe_registrar() then
            return;
        end if;
        raise exception using errcode = 'AK004',
            message = format('%s of ARK %s refused: name the registered client the change acts as; only the operator role changes an ARK without one', p_what, p_ark);
    end if;
    select id, client_id, active, expires_at, allowed_scopes, authority, naan, manager_id, shoulder_id, db_role
      into c from client where id = p_client;
    if not found then
        raise exception using errcode = 'AK004',
            message = format('%s of ARK %s refused: the client is not registered', p_what, p_ark);
    end if;
    if c.db_role is not null and not arkhe_session_in(c.db_role) then
        raise exception using errcode = 'AK006',
            message = format('%s of ARK %s refused: client %s is bound to database role %s, and this session''s login role %s is not a member of it',
                             p_what, p_ark, c.client_id, c.db_role, session_user);
    end if;
    select id, naan, shoulder, manager_id into s from shoulder where id = p_shoulder;
    if not c.active or (c.expires_at is not null and c.expires_at <= now())
       or not (p_scope = any (c.allowed_scopes))
       or (c.shoulder_id is not null and c.shoulder_id is distinct from s.id)
       or not coalesce(   c.authority = 'system'
                       or (c.authority = 'naan' and c.naan = s.naan)
                       or (c.authority = 'manager' and (c.manager_id = s.manager_id
                           or (p_scope in ('ark:update', 'ark:tombstone') and arkhe_succeeds(c.manager_id, s.manager_id)))), false) then
        raise exception using errcode = 'AK004',
            message = format('%s of ARK %s refused: client %s (authority %s, scopes %s, %s) does not reach shoulder %s of NAAN %s with scope %s; reach comes from the client''s registration only',
                             p_what, p_ark, c.client_id, c.authority, array_to_string(c.allowed_scopes, ' '),
                             case when not c.active then 'not active'
                                  when c.expires_at is not null and c.expires_at <= now() then 'expired'
                                  else 'active' end,
                             s.shoulder, s.naan, p_scope);
    end if;
    select name, active into cm from manager where id = c.manager_id;
    if cm.active is false then
        raise exception using errcode = 'AK004',
            message = format('%s of ARK %s refused: client %s acts for manager %s, which is no longer active (departed, succeeded or set inactive); a successor''s clients act for its ARKs',
                             p_what, p_ark, c.client_id, cm.name);
    end if;
end $$;

--
-- Name: arkhe_client_reach(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_client_reach() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare s_manager bigint; op text := arkhe_role('operator');
begin
    if new.db_role is not null and (tg_op = 'INSERT' or new.db_role is distinct from old.db_role)
       and to_regrole(quote_ident(new.db_role)) is null then
        raise exception using errcode = '42704',
            message = format('client %s: database role %s does not exist; create the login role first', new.client_id, new.db_role);
    end if;
    if tg_op = 'UPDATE' then
        if new.client_id is distinct from old.client_id or new.naan is distinct from old.naan
           or new.subject_type is distinct from old.subject_type then
            raise exception using errcode = 'AK002',
                message = format('client %s: client_id, NAAN and subject type never change', old.client_id);
        end if;
        if (new.authority is distinct from old.authority
            or new.manager_id is distinct from old.manager_id
            or (old.shoulder_id is not null and new.shoulder_id is distinct from old.shoulder_id)
            or not (new.allowed_scopes <@ old.allowed_scopes)
            or (old.expires_at is not null and (new.expires_at is null or new.expires_at > old.expires_at))
            or (old.db_role is not null and new.db_role is distinct from old.db_role))
           and not arkhe_session_in(op) then
            raise exception using errcode = 'AK004',
                message = case when op is null then
                    format('client %s: reach (authority, manager, pinned shoulder, scopes, expiry, database role) may be narrowed but never widened on a ledger without roles; register a new client', old.client_id)
                else
                    format('client %s: widening a client''s reach (authority, manager, pinned shoulder, scopes, expiry, database role) is the operator role''s decision, and this session''s login role %s is not a member of %s', old.client_id, session_user, op)
                end;
        end if;
    end if;
    if new.shoulder_id is not null and new.authority = 'manager' then
        select manager_id into s_manager from shoulder where id = new.shoulder_id;
        if s_manager is distinct from new.manager_id then
            raise exception using errcode = 'AK004',
                message = format('client %s: a manager client can be pinned only to a shoulder its manager holds', new.client_id);
        end if;
    end if;
    return new;
end $$;

--
-- Name: arkhe_counter_rises(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_counter_rises() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare k text; t text := regexp_replace(tg_table_name, '_[0-9]+$', '');
begin
    if arkhe_registrar() then
        return new;
    end if;
    for k in select o.key from jsonb_each(to_jsonb(old)) o join jsonb_each(to_jsonb(new)) n using (key)
             where case when o.key in ('shoulder_id', 'manager_id', 'day') or jsonb_typeof(o.value) <> 'number'
                        then n.value is distinct from o.value
                        else (n.value)::numeric < (o.value)::numeric end loop
        raise exception using errcode = 'AK002',
            message = format('UPDATE of %s refused: column %s only rises (a key never changes)', t, k);
    end loop;
    return new;
end $_$;

--
-- Name: arkhe_credential_kind(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_credential_kind() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare st text;
begin
    select subject_type into st from client where id = new.client_pk;
    if st = 'machine' and new.kind = 'password' then
        raise exception using errcode = 'AK005',
            message = 'a machine client cannot hold a password';
    elsif st = 'person' and new.kind in ('api_key', 'client_secret') then
        raise exception using errcode = 'AK005',
            message = format('a person client cannot hold an %s', new.kind);
    end if;
    if tg_op = 'UPDATE' and (new.client_pk <> old.client_pk or new.kind <> old.kind or new.prefix <> old.prefix
                             or (not old.active and new.active)
                             or (new.hashed <> old.hashed
                                 and not (coalesce(current_setting('arkhe.rehash', true), '') = old.prefix
                                          and new.hashed ~ '^\$argon2id\$v=19\$m=[0-9]+,t=[0-9]+,p=[0-9]+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$'))) then
        raise exception using errcode = 'AK002',
            message = 'a credential never changes owner, kind or secret, and a revoked one stays revoked';
    end if;
    if tg_op = 'UPDATE' and ((old.active and not new.active)
                             or (new.locked_until is not null and new.locked_until is distinct from old.locked_until)) then
        perform pg_advisory_xact_lock(hashtext('arkhe.key'), hashtext(old.prefix));
    end if;
    return new;
end $_$;

--
-- Name: arkhe_export_mark(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_export_mark(OUT ark_mark bigint, OUT change_mark bigint) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    lock table ark_change, ark in share mode;
    ark_mark := coalesce(pg_sequence_last_value(pg_get_serial_sequence('ark', 'seq')::regclass), 0);
    change_mark := coalesce(pg_sequence_last_value('ark_change_mark'::regclass), 0);
end $$;

--
-- Name: arkhe_fold_mint_one_tally(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_fold_mint_one_tally() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    f record; i integer;
    sh bigint[] := '{}'; dr bigint[] := '{}'; co bigint[] := '{}';
    mg bigint[] := '{}'; dy date[] := '{}'; mi integer[] := '{}';
begin
    if not pg_try_advisory_xact_lock(hashtext('arkhe.mint_one_tally')) then
        return;
    end if;
    -- summed per shoulder and per manager and day, so that each counter row is written once
    for f in delete from mint_one_tally returning mint_one_tally.shoulder_id, mint_one_tally.manager_id,
                                                  mint_one_tally.day, mint_one_tally.draws, mint_one_tally.collisions loop
        i := array_position(sh, f.shoulder_id);
        if i is null then
            sh := array_append(sh, f.shoulder_id);
            dr := array_append(dr, f.draws::bigint);
            co := array_append(co, f.collisions::bigint);
        else
            dr[i] := dr[i] + f.draws;
            co[i] := co[i] + f.collisions;
        end if;
        if f.manager_id is not null then
            i := null;
            for j in 1 .. coalesce(cardinality(mg), 0) loop
                if mg[j] = f.manager_id and dy[j] = f.day then
                    i := j;
                    exit;
                end if;
            end loop;
            if i is null then
                mg := array_append(mg, f.manager_id);
                dy := array_append(dy, f.day);
                mi := array_append(mi, 1);
            else
                mi[i] := mi[i] + 1;
            end if;
        end if;
    end loop;
    for i in 1 .. coalesce(cardinality(sh), 0) loop
        insert into shoulder_tally as t (shoulder_id, draws, collisions) values (sh[i], dr[i], co[i])
        on conflict (shoulder_id) do update set draws = t.draws + excluded.draws, collisions = t.collisions + excluded.collisions;
    end loop;
    for i in 1 .. coalesce(cardinality(mg), 0) loop
        insert into mint_quota as m (manager_id, day, minted) values (mg[i], dy[i], mi[i])
        on conflict (manager_id, day) do update set minted = m.minted + excluded.minted;
    end loop;
end $$;

--
-- Name: FUNCTION arkhe_fold_mint_one_tally(); Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON FUNCTION public.arkhe_fold_mint_one_tally() IS 'Folds mint_one_tally into shoulder_tally and mint_quota, one transaction at a time (the others skip it).';

--
-- Name: arkhe_grant_roles(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0030();
    execute format('grant select on ark_update_verdict to %I, %I, %I', p, w, a);
end $$;

--
-- Name: arkhe_grant_roles_before_0006(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0006() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
    t text;
begin
    if p is null or w is null or a is null then
        raise exception using errcode = '42704', message = 'this ledger has no roles; arkhe init --roles creates them';
    end if;
    foreach t in array array['ledger_setting', 'schema_migration', 'naan', 'manager', 'shoulder', 'client',
                             'import_run', 'ark', 'ark_change', 'receipt', 'mint_receipt', 'shoulder_tally',
                             'mint_quota', 'audit_event', 'audit_summary', 'unknown_subject',
                             'link_state', 'link_event', 'link_exclusion'] loop
        execute format('grant select on %I to %I, %I, %I', t, p, w, a);
    end loop;
    execute format('grant select (id, client_pk, kind, prefix, active, failed_attempts, locked_until, created_at, revoked_at, last_used_at) on credential to %I, %I, %I', p, w, a);
    -- the operator: registration, keys
    execute format('grant insert, update on naan, manager, shoulder, client to %I', p);
    execute format('grant insert on credential to %I', p);
    execute format('grant update (active, revoked_at) on credential to %I', p);
    -- the writer: mint, import, reconcile --apply, repoint, tombstone
    execute format('grant insert on ark, receipt, import_run, naan, shoulder to %I', w);
    execute format('grant insert, update on shoulder_tally, mint_quota to %I', w);
    -- the link checker's run and the import of a legacy checker's state are the writer's
    execute format('grant insert, update on link_state to %I', w);
    execute format('grant insert on link_event to %I', w);
    -- exclusions are the operator's decision; lifting one sets its end (never a delete)
    execute format('grant insert, update on link_exclusion to %I', p);
    execute format('grant update (finished_at, digest, counts) on import_run to %I', w);
    execute format('grant update (name, who, redirect, erc_where, na_policy, registered_at, note) on naan to %I', w);
    execute format('grant update (minter, redirect, note) on shoulder to %I', w);
    execute format('grant execute on function ark_repoint(text, text, bigint, text, timestamptz, bigint), '
                   'ark_tombstone(text, text, bigint, text, timestamptz), '
                   'ark_apply_export(text, text, text, text, text, text, text, text, jsonb, bigint, text, bigint, timestamptz) to %I', w);
    -- keys are checked by whoever acts as a client
    execute format('grant execute on function arkhe_key_params(text), arkhe_key_verify(text, text, bytea), '
                   'arkhe_key_rehash(text, text, bytea, text) to %I, %I, %I', p, w, a);
    -- every role appends its own audit records; the auditor its summaries
    execute format('grant insert on audit_event to %I, %I, %I', p, w, a);
    execute format('grant insert on audit_summary to %I', a);
end $$;

--
-- Name: arkhe_grant_roles_before_0009(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0009() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0006();
    execute format('grant select on import_skipped to %I, %I, %I', p, w, a);
    execute format('grant insert on import_skipped to %I', w);
end $$;

--
-- Name: arkhe_grant_roles_before_0015(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0015() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0009();
    execute format('grant select (backend, login, client_pk, prefix, at) on key_session to %I, %I, %I', p, w, a);
    execute format('grant execute on function arkhe_key_login(text, text, bytea), arkhe_key_logout() to %I, %I, %I', p, w, a);
end $$;

--
-- Name: arkhe_grant_roles_before_0016(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0016() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0015();
    -- revoking the table's privilege revokes it from each column too
    execute format('revoke select on credential from %I', w);
    execute format('grant execute on function arkhe_key_locked_until(text) to %I, %I, %I', p, w, a);
end $$;

--
-- Name: arkhe_grant_roles_before_0017(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0017() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    r text := arkhe_role('resolver');
begin
    perform arkhe_grant_roles_before_0016();
    if r is null then
        return; -- roles created before this version: arkhe init --roles records the resolver's
    end if;
    execute format('grant select (ark, naan, shoulder_id, url, status, tombstone_reason, tombstoned_at, '
                   'erc_who, erc_what, erc_when, commitment) on ark to %I', r);
    execute format('grant select (naan, name, is_authoritative, redirect, na_policy, who, erc_where, registered_at) on naan to %I', r);
    execute format('grant select (id, naan, shoulder, manager_id, redirect, status, created_at) on shoulder to %I', r);
    execute format('grant select (id, name) on manager to %I', r);
    execute format('grant select (version) on schema_migration to %I', r);
end $$;

--
-- Name: arkhe_grant_roles_before_0018(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0018() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

--
-- Name: arkhe_grant_roles_before_0019(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0019() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator');
begin
    perform arkhe_grant_roles_before_0018();
    execute format('grant execute on function arkhe_raise_ark_seq(bigint, text[], bigint[]) to %I', p);
end $$;

--
-- Name: arkhe_grant_roles_before_0020(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0020() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0019();
    execute format('grant execute on function arkhe_export_mark() to %I, %I, %I', p, w, a);
end $$;

--
-- Name: arkhe_grant_roles_before_0025(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0025() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0020();
    execute format('grant execute on function ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb) to %I', w);
    execute format('grant execute on function arkhe_key_state(text) to %I, %I, %I', p, w, a);
    execute format('grant select on mint_one_tally to %I, %I, %I', p, w, a);
end $$;

--
-- Name: arkhe_grant_roles_before_0027(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0027() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0025();
    execute format('grant execute on function arkhe_note_unknown_subject(text, text, inet) to %I', w);
end $$;

--
-- Name: arkhe_grant_roles_before_0028(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0028() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0027();
    execute format('grant execute on function ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[]) to %I', w);
end $$;

--
-- Name: arkhe_grant_roles_before_0030(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_grant_roles_before_0030() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0028();
    execute format('grant execute on function arkhe_key_hold(text) to %I, %I', p, w);
end $$;

--
-- Name: arkhe_import_registration(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_import_registration() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare k text; t text := regexp_replace(tg_table_name, '_[0-9]+$', '');
begin
    if arkhe_registrar() then
        return new;
    end if;
    if tg_op = 'INSERT' then
        if new.import_run_id is null
           or (t = 'shoulder' and (to_jsonb(new)->>'status' <> 'reserved' or to_jsonb(new)->>'manager_id' is not null)) then
            raise exception using errcode = '42501',
                message = format('%s: registration is the operator role''s; an import creates only NAANs and reserved shoulders without a manager, for the ARKs it brings', t);
        end if;
        return new;
    end if;
    for k in select o.key from jsonb_each(to_jsonb(old)) o join jsonb_each(to_jsonb(new)) n using (key)
             where o.value <> 'null'::jsonb and o.value is distinct from n.value loop
        raise exception using errcode = '42501',
            message = format('%s: column %s holds a registered value; only the operator role changes it (an import only fills empty values)', t, k);
    end loop;
    return new;
end $_$;

--
-- Name: arkhe_initiating_placement(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_initiating_placement() RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare g bigint := citus_backend_gpid();
begin
    return g % 10000000000 = pg_backend_pid()
       and g / 10000000000 = (select n.nodeid from pg_dist_node n join pg_dist_local_group l using (groupid)
                              where n.noderole = 'primary' order by n.nodeid limit 1);
end $$;

--
-- Name: arkhe_key_hold(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_hold(p_prefix text, OUT client_id text, OUT state text, OUT locked_until timestamp with time zone) RETURNS SETOF record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare k record;
begin
    perform pg_advisory_xact_lock_shared(hashtext('arkhe.key'), hashtext(p_prefix));
    -- plpgsql, not sql: Citus plans no parameterized statement of a SQL function; and this
    -- read takes its snapshot after the lock
    select c.client_pk, c.active, c.locked_until into k
      from credential c where c.prefix = p_prefix and c.kind = 'api_key';
    if not found then
        return;
    end if;
    select l.client_id into client_id from client l where l.id = k.client_pk;
    state := case when not k.active then 'revoked'
                  when k.locked_until is not null and k.locked_until > now() then 'locked'
                  else 'active' end;
    locked_until := k.locked_until;
    return next;
end $$;

--
-- Name: arkhe_key_locked_until(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_locked_until(p_prefix text) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select locked_until from credential
    where prefix = p_prefix and kind = 'api_key' and locked_until > now()
$$;

--
-- Name: arkhe_key_login(text, text, bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_login(p_client_id text, p_prefix text, p_hash bytea) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare v text; me bigint := arkhe_session_backend(); tok text; pk bigint; who text := session_user;
        -- the backends alive on this node, read first (Citus plans a modification's subquery
        -- on a view apart from the view's owner rights)
        live bigint[] := array(select pid from pg_stat_activity);
begin
    if arkhe_layout() = 'citus' then
        -- a global process id is the node's id times 10^10 plus the process id
        delete from key_session k
        where k.backend / 10000000000 = me / 10000000000 and not (k.backend % 10000000000 = any (live));
    else
        delete from key_session k where not (k.backend = any (live));
    end if;
    v := arkhe_key_verify(p_client_id, p_prefix, p_hash);
    delete from key_session where backend = me;
    perform set_config('arkhe.key_session', '', false);
    if v = 'ok' then
        if arkhe_layout() <> 'citus' then
            tok := replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
            perform set_config('arkhe.key_session', tok, false);
        end if;
        -- every value is computed here, not where Citus sends the insert (as the owner)
        select c.client_pk into pk from credential c where c.prefix = p_prefix and c.kind = 'api_key';
        insert into key_session (backend, token, login, client_pk, prefix)
        values (me, sha256(convert_to(tok, 'UTF8')), who, pk, p_prefix);
    end if;
    return v;
end $$;

--
-- Name: arkhe_key_logout(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_logout() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    delete from key_session where backend = arkhe_session_backend();
    select set_config('arkhe.key_session', '', false);
$$;

--
-- Name: arkhe_key_params(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_params(p_prefix text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
    select regexp_replace(hashed, '\$[^$]*$', '') from credential where prefix = p_prefix and kind = 'api_key'
$_$;

--
-- Name: arkhe_key_rehash(text, text, bytea, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_rehash(p_client_id text, p_prefix text, p_hash bytea, p_new text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare v text;
begin
    v := arkhe_key_verify(p_client_id, p_prefix, p_hash);
    if v <> 'ok' then
        return v;
    end if;
    perform set_config('arkhe.rehash', p_prefix, true);
    update credential set hashed = p_new where prefix = p_prefix;
    perform set_config('arkhe.rehash', '', true);
    return v;
end $$;

--
-- Name: arkhe_key_state(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_state(p_prefix text, OUT client_id text, OUT subject_type text, OUT state text, OUT locked_until timestamp with time zone) RETURNS SETOF record
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select l.client_id, l.subject_type,
           case when not c.active then 'revoked'
                when c.locked_until is not null and c.locked_until > now() then 'locked'
                else 'active' end,
           c.locked_until
      from credential c join client l on l.id = c.client_pk
     where c.prefix = p_prefix and c.kind = 'api_key'
$$;

--
-- Name: arkhe_key_verify(text, text, bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_key_verify(p_client_id text, p_prefix text, p_hash bytea) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare k record; stored text;
begin
    select c.id, c.active, c.locked_until, c.failed_attempts, c.hashed, l.client_id
      into k from credential c join client l on l.id = c.client_pk
     where c.prefix = p_prefix and c.kind = 'api_key' for update of c;
    if not found or k.client_id is distinct from p_client_id then
        return 'unknown';
    end if;
    if not k.active then
        return 'revoked';
    end if;
    if k.locked_until is not null and k.locked_until > now() then
        return 'locked';
    end if;
    stored := split_part(k.hashed, '$', 6);
    stored := rpad(stored, ((length(stored) + 3) / 4) * 4, '=');
    if p_hash is not null and sha256(p_hash) = sha256(decode(stored, 'base64')) then
        update credential set failed_attempts = 0, locked_until = null, last_used_at = now() where id = k.id;
        return 'ok';
    end if;
    if k.failed_attempts + 1 >= 10 then
        update credential set failed_attempts = 0, locked_until = now() + interval '15 minutes' where id = k.id;
    else
        update credential set failed_attempts = k.failed_attempts + 1 where id = k.id;
    end if;
    return 'wrong';
end $_$;

--
-- Name: arkhe_keys_required(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_keys_required() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select exists (select 1 from ledger_setting where name = 'require_keys' and value = 'on')
$$;

--
-- Name: arkhe_layout(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_layout() RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select value from ledger_setting where name = 'layout'
$$;

--
-- Name: arkhe_link_exclusion_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_link_exclusion_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    if old.ended_at is not null or new.ended_at is null
       or (new.manager_id, new.shoulder_id, new.host, new.reason, new.created_at, new.created_by)
          is distinct from (old.manager_id, old.shoulder_id, old.host, old.reason, old.created_at, old.created_by) then
        raise exception using errcode = 'AK002',
            message = 'UPDATE of link_exclusion refused: an exclusion only ever gets its end (ended_at, ended_by), once';
    end if;
    return new;
end $$;

--
-- Name: arkhe_link_repoint(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_link_repoint() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare n integer;
begin
    update link_state set
        target = new.after_url, checked_at = null, final_url = null, status_code = null,
        error_class = null, outcome = null, mime_type = null, size = null, duration_ms = null,
        redirects = null, body_hash = null, hash_alg = null, consecutive_failures = 0,
        first_failure_at = null, last_success_at = null, broken = false, good_host = null,
        good_media_type = null, good_size = null, due_at = null, import_run_id = null,
        event_seq = event_seq + 1
    where ark = new.ark
    returning event_seq into n;
    if found then
        insert into link_event (ark, seq, at, kind, target, reason)
        values (new.ark, n, coalesce(new.at, now()), 'repointed', new.after_url,
                format('target %s -> %s', coalesce(new.before_url, '(none)'), coalesce(new.after_url, '(none)')));
    end if;
    return null;
end $$;

--
-- Name: arkhe_manager_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_manager_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare s record; h bigint; hops int := 0;
begin
    if old.departed_at is not null and new.departed_at is distinct from old.departed_at then
        raise exception using errcode = 'AK003',
            message = format('manager %s of NAAN %s departed at %s; a departure is one-way (register a new manager)',
                             old.name, old.naan, old.departed_at);
    end if;
    if old.succeeded_by_id is not null and new.succeeded_by_id is distinct from old.succeeded_by_id then
        raise exception using errcode = 'AK003',
            message = format('manager %s of NAAN %s was succeeded by %s; a succession is one-way',
                             old.name, old.naan, (select name from manager where id = old.succeeded_by_id));
    end if;
    if new.succeeded_by_id is null or new.succeeded_by_id is not distinct from old.succeeded_by_id then
        return new;
    end if;
    perform pg_advisory_xact_lock(hashtext('arkhe manager succession'));
    h := new.succeeded_by_id;
    while h is not null loop
        if h = new.id then
            raise exception using errcode = 'AK008',
                message = format('manager %s of NAAN %s cannot be succeeded by %s: the chain of successions would come back to %s',
                                 new.name, new.naan, (select name from manager where id = new.succeeded_by_id), new.name);
        end if;
        hops := hops + 1;
        exit when hops > 1000;
        select succeeded_by_id into h from manager where id = h;
    end loop;
    select name, naan, active into s from manager where id = new.succeeded_by_id;
    if s.name is null then
        return new; -- no such manager: the foreign key refuses it
    end if;
    if s.naan is distinct from new.naan then
        raise exception using errcode = 'AK008',
            message = format('manager %s of NAAN %s cannot be succeeded by %s of NAAN %s: a successor is a manager of the same NAAN (the NAAN answers for every ARK under it)',
                             new.name, new.naan, s.name, s.naan);
    end if;
    if not s.active then
        raise exception using errcode = 'AK008',
            message = format('manager %s of NAAN %s cannot be succeeded by %s: the successor must be active (a departed one''s successor, if any, is the one to name)',
                             new.name, new.naan, s.name);
    end if;
    return new;
end $$;

--
-- Name: arkhe_note_unknown_subject(text, text, inet); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_note_unknown_subject(p_issuer text, p_subject text, p_ip inet, OUT id bigint, OUT seen bigint) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare t timestamptz := now();
begin
    -- plpgsql, not sql: Citus plans no parameterized statement of a SQL function, and wants
    -- no volatile function (now()) in the DO UPDATE SET clause, hence the variable
    insert into unknown_subject as u (subject, issuer, first_seen, last_seen, ip)
    values (p_subject, p_issuer, t, t, p_ip)
    on conflict (subject, issuer) do update
        set last_seen = t, seen = u.seen + 1, ip = coalesce(excluded.ip, u.ip)
    returning u.id, u.seen into id, seen;
end $$;

--
-- Name: arkhe_notify_resolver(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_notify_resolver() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    perform pg_notify('arkhe_resolver', '');
    return null;
end $$;

--
-- Name: arkhe_raise_ark_seq(bigint, text[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_raise_ark_seq(p_high_water bigint, p_shoulders text[], p_draws bigint[]) RETURNS TABLE(what text, was bigint, raised_to bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare
    seqname text := pg_get_serial_sequence('ark', 'seq');
    cur bigint; sid bigint;
begin
    if p_high_water < 0 or coalesce(array_length(p_shoulders, 1), 0) <> coalesce(array_length(p_draws, 1), 0)
       or exists (select 1 from unnest(p_draws) d where d < 0 or d is null) then
        raise exception using errcode = '22023',
            message = 'arkhe_raise_ark_seq: the high-water mark and the draws must not be negative, and every shoulder needs its draws';
    end if;
    cur := coalesce(pg_sequence_last_value(seqname::regclass), 0);
    if p_high_water is not null and cur < p_high_water then
        perform setval(seqname, p_high_water, true);
        what := 'ark.seq'; was := cur; raised_to := p_high_water;
        return next;
    end if;
    for i in 1 .. coalesce(array_length(p_shoulders, 1), 0) loop
        select s.id into sid from shoulder s where s.naan || s.shoulder = p_shoulders[i];
        if sid is null then
            what := 'shoulder ' || p_shoulders[i]; was := null; raised_to := null;
            return next;
            continue;
        end if;
        select t.draws into cur from shoulder_tally t where t.shoulder_id = sid;
        if cur is null or cur < p_draws[i] then
            insert into shoulder_tally as t (shoulder_id, draws) values (sid, p_draws[i])
            on conflict (shoulder_id) do update set draws = greatest(t.draws, excluded.draws);
            what := 'shoulder ' || p_shoulders[i]; was := coalesce(cur, 0); raised_to := p_draws[i];
            return next;
        end if;
    end loop;
end $$;

--
-- Name: arkhe_refuse_delete(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_refuse_delete() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
declare
    -- on Citus a row-level DELETE fires on the shard (ark_102008): name the table
    t text := regexp_replace(tg_table_name, '_[0-9]+$', '');
begin
    raise exception using errcode = 'AK001',
        message = format('%s on %s refused: rows of an ARK ledger are never deleted', tg_op, t),
        hint = case t
                   when 'ark' then 'tombstone the ARK instead: select ark_tombstone(...)'
                   when 'shoulder' then 'retire the shoulder instead: status = ''retired'''
                   when 'credential' then 'revoke it instead: active = false'
                   when 'client' then 'deactivate it instead: active = false'
                   else 'nothing in an ARK ledger is deleted' end;
end $_$;

--
-- Name: arkhe_refuse_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_refuse_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $_$
begin
    raise exception using errcode = 'AK002',
        message = format('UPDATE on %s refused: the table is append-only', regexp_replace(tg_table_name, '_[0-9]+$', ''));
end $_$;

--
-- Name: arkhe_registrar(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_registrar() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select arkhe_role('operator') is null
        or arkhe_session_in(arkhe_role('operator'))
        or arkhe_session_in(arkhe_role('owner'))
$$;

--
-- Name: arkhe_role(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_role(p_kind text) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select value from ledger_setting where name = 'role.' || p_kind
$$;

--
-- Name: arkhe_run_final(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_run_final() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    if old.finished_at is not null then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of import_run refused: the record of a finished run never changes');
    end if;
    return new;
end $$;

--
-- Name: arkhe_session_backend(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_session_backend() RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    if arkhe_layout() = 'citus' then
        return citus_backend_gpid();
    end if;
    return pg_backend_pid();
end $$;

--
-- Name: arkhe_session_client(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_session_client() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select k.client_pk from key_session k
    where k.backend = arkhe_session_backend()
      and case when arkhe_layout() = 'citus' then k.login = session_user or session_user = arkhe_role('owner')
               else k.login = session_user
                    and k.token = sha256(convert_to(coalesce(current_setting('arkhe.key_session', true), ''), 'UTF8')) end
$$;

--
-- Name: arkhe_session_in(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_session_in(p_role text) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
    select case when p_role is null or to_regrole(quote_ident(p_role)) is null then false
                else pg_has_role(session_user, to_regrole(quote_ident(p_role)), 'MEMBER') end
$$;

--
-- Name: arkhe_shoulder_id_fixed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_shoulder_id_fixed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    raise exception using errcode = 'AK002',
        message = format('shoulder %s of NAAN %s: its id never changes (its ARKs refer to it)', old.shoulder, old.naan);
end $$;

--
-- Name: arkhe_shoulder_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_shoulder_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
begin
    if new.naan is distinct from old.naan or new.shoulder is distinct from old.shoulder then
        raise exception using errcode = 'AK002',
            message = format('shoulder %s of NAAN %s: NAAN and shoulder string never change', old.shoulder, old.naan);
    end if;
    if old.status = 'retired' and new.status <> 'retired' then
        raise exception using errcode = 'AK003',
            message = format('shoulder %s of NAAN %s is retired; retired is one-way: a name it held may have been used meanwhile', old.shoulder, old.naan);
    end if;
    if old.retired_at is not null and new.retired_at is distinct from old.retired_at then
        raise exception using errcode = 'AK003',
            message = format('shoulder %s of NAAN %s: retired_at never changes', old.shoulder, old.naan);
    end if;
    return new;
end $$;

--
-- Name: arkhe_succeeds(bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.arkhe_succeeds(p_successor bigint, p_manager bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
declare h bigint := p_manager; hops int := 0;
begin
    if p_successor is null or p_manager is null then
        return false;
    end if;
    loop
        select succeeded_by_id into h from manager where id = h;
        if h is null then
            return false;
        end if;
        if h = p_successor then
            return true;
        end if;
        hops := hops + 1;
        -- a chain never cycles (arkhe_manager_update refuses one); never follow one for ever
        if hops > 1000 then
            return false;
        end if;
    end loop;
end $$;

--
-- Name: ark; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ark (
    seq bigint NOT NULL,
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    shoulder_id bigint NOT NULL,
    assigned_name character varying(255) NOT NULL COLLATE pg_catalog."C",
    url character varying(2048),
    commitment text,
    erc_who text,
    erc_what text,
    erc_when text,
    metadata jsonb,
    status public.ark_status,
    tombstone_reason text,
    tombstoned_at timestamp with time zone,
    original text COLLATE pg_catalog."C",
    check_ok boolean,
    created_at timestamp with time zone,
    updated_at timestamp with time zone,
    created_by bigint,
    updated_by bigint,
    import_run_id bigint,
    change_seq integer DEFAULT 0,
    request_id character varying(255) COLLATE pg_catalog."C",
    payload_digest bytea,
    CONSTRAINT ark_change_seq_check CHECK ((change_seq >= 0)),
    CONSTRAINT ark_key_form CHECK (((ark)::text = (((naan)::text || '/'::text) || (assigned_name)::text))),
    CONSTRAINT ark_receipt_client CHECK (((request_id IS NULL) OR (created_by IS NOT NULL))),
    CONSTRAINT ark_receipt_digest CHECK (((payload_digest IS NULL) OR (length(payload_digest) = ANY (ARRAY[8, 16])))),
    CONSTRAINT ark_receipt_whole CHECK (((request_id IS NULL) = (payload_digest IS NULL)))
);

--
-- Name: COLUMN ark.status; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.ark.status IS 'reserved or unavailable, or public: NULL means public (a minted ARK stores NULL); read ark_status_text(status)';

--
-- Name: COLUMN ark.change_seq; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.ark.change_seq IS 'how many ARK_CHANGE rows describe this ARK; NULL means 0 (a minted ARK stores no count): read coalesce(change_seq, 0)';

--
-- Name: COLUMN ark.request_id; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.ark.request_id IS 'The mint receipt''s request ID (with created_by and payload_digest): unique per client through index ark_receipt; null on an imported ARK.';

--
-- Name: ark_change; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ark_change (
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    seq integer NOT NULL,
    at timestamp with time zone,
    action text NOT NULL,
    before_url character varying(2048),
    after_url character varying(2048),
    before_status text,
    after_status text,
    reason text,
    before_erc jsonb,
    after_erc jsonb,
    by_client bigint,
    by_text text,
    ip inet,
    import_run_id bigint,
    xact xid8 DEFAULT pg_current_xact_id() NOT NULL,
    mark bigint,
    CONSTRAINT ark_change_action_check CHECK ((action = ANY (ARRAY['update'::text, 'tombstone'::text, 'metadata'::text, 'restore'::text]))),
    CONSTRAINT ark_change_seq_check1 CHECK ((seq > 0))
);

--
-- Name: COLUMN ark_change.mark; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.ark_change.mark IS 'ledger-wide change number for incremental exports (sequence ark_change_mark); NULL for rows written before marks existed';

--
-- Name: ark_change_mark; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.ark_change_mark
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: ark_change_mark; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.ark_change_mark OWNED BY public.ark_change.mark;

--
-- Name: ark_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.ark ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.ark_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: ark_update_stage; Type: TABLE; Schema: public; Owner: -
--

CREATE UNLOGGED TABLE public.ark_update_stage (
    token bigint NOT NULL,
    idx integer NOT NULL,
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    request_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL,
    mask integer NOT NULL,
    url text,
    erc_who text,
    erc_what text,
    erc_when text,
    commitment text,
    status text,
    reason text,
    outcome text,
    detail text,
    check_run boolean DEFAULT false NOT NULL
);

--
-- Name: TABLE ark_update_stage; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.ark_update_stage IS 'Change rows of bulk changes in flight, staged by COPY and consumed by ark_update_apply in the same transaction; empty between batches.';

--
-- Name: COLUMN ark_update_stage.check_run; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.ark_update_stage.check_run IS 'The row''s ARK may have been changed by an earlier batch of the same run: ark_update_apply looks up the run''s receipts for it (with p_check_run).';

--
-- Name: ark_update_token; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.ark_update_token
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: ark_update_verdict; Type: TABLE; Schema: public; Owner: -
--

CREATE UNLOGGED TABLE public.ark_update_verdict (
    token bigint NOT NULL,
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    idx integer NOT NULL,
    request_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL,
    mask integer NOT NULL,
    check_run boolean NOT NULL,
    rule_no smallint NOT NULL,
    outcome text NOT NULL,
    detail text,
    shoulder_id bigint,
    erc_who text,
    erc_what text,
    erc_when text,
    commitment text,
    seq integer,
    action text,
    before_url text,
    after_url text,
    before_status text,
    after_status text,
    after_reason text,
    reason text,
    before_erc jsonb,
    after_erc jsonb
);

--
-- Name: TABLE ark_update_verdict; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.ark_update_verdict IS 'The verdicts of the staged change rows of bulk changes in flight, written and consumed by ark_update_apply in the same transaction; empty between batches.';

--
-- Name: audit_event; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_event (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    client_id character varying(255) COLLATE pg_catalog."C",
    authority text,
    action text NOT NULL,
    target text,
    detail jsonb,
    db_role text DEFAULT SESSION_USER,
    os_user text DEFAULT NULLIF(current_setting('arkhe.os_user'::text, true), ''::text)
);

--
-- Name: audit_event_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.audit_event ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.audit_event_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: audit_summary; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_summary (
    id bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    snapshot pg_snapshot NOT NULL,
    origin text NOT NULL,
    high_water bigint NOT NULL,
    ark_count bigint NOT NULL,
    digest bigint NOT NULL,
    shoulders jsonb NOT NULL,
    blocks jsonb NOT NULL,
    full_audit boolean NOT NULL,
    signals jsonb,
    CONSTRAINT audit_summary_ark_count_check CHECK ((ark_count >= 0)),
    CONSTRAINT audit_summary_high_water_check CHECK ((high_water >= 0))
);

--
-- Name: audit_summary_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.audit_summary ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.audit_summary_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: client; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.client (
    id bigint NOT NULL,
    client_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    manager_id bigint,
    subject_type text NOT NULL,
    authority text NOT NULL,
    shoulder_id bigint,
    allowed_scopes text[] DEFAULT '{}'::text[] NOT NULL COLLATE pg_catalog."C",
    active boolean DEFAULT true NOT NULL,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    db_role character varying(63) COLLATE pg_catalog."C",
    CONSTRAINT client_allowed_scopes_check CHECK ((allowed_scopes <@ ARRAY['ark:mint'::text, 'ark:update'::text, 'ark:tombstone'::text, 'ark:import'::text, 'ark:read'::text])),
    CONSTRAINT client_authority_check CHECK ((authority = ANY (ARRAY['system'::text, 'naan'::text, 'manager'::text]))),
    CONSTRAINT client_manager_authority CHECK (((authority <> 'manager'::text) OR (manager_id IS NOT NULL))),
    CONSTRAINT client_naan_expires CHECK (((authority <> 'naan'::text) OR (expires_at IS NOT NULL))),
    CONSTRAINT client_subject_type_check CHECK ((subject_type = ANY (ARRAY['machine'::text, 'person'::text])))
);

--
-- Name: client_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.client ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.client_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: credential; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.credential (
    id bigint NOT NULL,
    client_pk bigint NOT NULL,
    kind text NOT NULL,
    prefix character varying(32) NOT NULL COLLATE pg_catalog."C",
    hashed text NOT NULL,
    active boolean DEFAULT true NOT NULL,
    failed_attempts integer DEFAULT 0 NOT NULL,
    locked_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    CONSTRAINT credential_kind_check CHECK ((kind = ANY (ARRAY['api_key'::text, 'client_secret'::text, 'password'::text])))
);

--
-- Name: credential_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.credential ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.credential_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: import_run; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.import_run (
    id bigint NOT NULL,
    command text DEFAULT 'import'::text NOT NULL,
    client_pk bigint,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    source_file text NOT NULL,
    format text NOT NULL,
    digest text,
    dry_run boolean DEFAULT false NOT NULL,
    counts jsonb,
    CONSTRAINT import_run_command_check CHECK ((command = ANY (ARRAY['import'::text, 'reconcile'::text])))
);

--
-- Name: import_run_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.import_run ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.import_run_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: import_skipped; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.import_skipped (
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    assigned_name character varying(255) NOT NULL COLLATE pg_catalog."C",
    reason text NOT NULL,
    import_run_id bigint NOT NULL,
    CONSTRAINT import_skipped_key_form CHECK (((ark)::text = (((naan)::text || '/'::text) || (assigned_name)::text))),
    CONSTRAINT import_skipped_reason_check CHECK ((reason = ANY (ARRAY['reserved'::text, 'test'::text, 'conflict'::text])))
);

--
-- Name: key_session; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.key_session (
    backend bigint NOT NULL,
    token bytea,
    login text NOT NULL,
    client_pk bigint NOT NULL,
    prefix text NOT NULL COLLATE pg_catalog."C",
    at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: ledger_setting; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ledger_setting (
    name text NOT NULL COLLATE pg_catalog."C",
    value text NOT NULL,
    CONSTRAINT ledger_setting_layout CHECK (((name <> 'layout'::text) OR (value = ANY (ARRAY['single'::text, 'citus'::text])))),
    CONSTRAINT ledger_setting_require_keys CHECK (((name <> 'require_keys'::text) OR (value = 'on'::text)))
);

--
-- Name: link_event; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.link_event (
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    seq integer NOT NULL,
    at timestamp with time zone NOT NULL,
    kind text NOT NULL,
    target character varying(2048),
    reason text,
    import_run_id bigint,
    CONSTRAINT link_event_kind_check CHECK ((kind = ANY (ARRAY['broken'::text, 'recovered'::text, 'content_changed'::text, 'repointed'::text]))),
    CONSTRAINT link_event_seq_check CHECK ((seq > 0))
);

--
-- Name: link_exclusion; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.link_exclusion (
    id bigint NOT NULL,
    manager_id bigint,
    shoulder_id bigint,
    host character varying(253) COLLATE pg_catalog."C",
    reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text,
    ended_at timestamp with time zone,
    ended_by text,
    CONSTRAINT link_exclusion_ended CHECK (((ended_at IS NULL) OR (ended_at >= created_at))),
    CONSTRAINT link_exclusion_host_check CHECK ((((host)::text = lower((host)::text)) AND ((host)::text <> ''::text))),
    CONSTRAINT link_exclusion_one CHECK ((num_nonnulls(manager_id, shoulder_id, host) = 1))
);

--
-- Name: link_exclusion_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.link_exclusion ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.link_exclusion_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: link_state; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.link_state (
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    target character varying(2048),
    checked_at timestamp with time zone,
    final_url text,
    status_code smallint,
    error_class text,
    outcome text,
    mime_type text,
    size bigint,
    duration_ms integer,
    redirects smallint,
    body_hash bytea,
    hash_alg text,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    first_failure_at timestamp with time zone,
    last_success_at timestamp with time zone,
    broken boolean DEFAULT false NOT NULL,
    good_host text,
    good_media_type text,
    good_size bigint,
    due_at timestamp with time zone,
    failing boolean GENERATED ALWAYS AS ((broken OR (consecutive_failures > 0) OR ((checked_at IS NOT NULL) AND (outcome IS DISTINCT FROM 'good'::text)))) STORED,
    event_seq integer DEFAULT 0 NOT NULL,
    import_run_id bigint,
    CONSTRAINT link_state_checked CHECK (((checked_at IS NULL) = (outcome IS NULL))),
    CONSTRAINT link_state_consecutive_failures_check CHECK ((consecutive_failures >= 0)),
    CONSTRAINT link_state_duration_ms_check CHECK ((duration_ms >= 0)),
    CONSTRAINT link_state_error_class_check CHECK ((error_class = ANY (ARRAY['bad_url'::text, 'bad_scheme'::text, 'blocked'::text, 'dns'::text, 'refused'::text, 'unreachable'::text, 'reset'::text, 'timeout'::text, 'tls'::text, 'redirect_loop'::text, 'too_many_redirects'::text, 'bad_redirect'::text, 'other'::text]))),
    CONSTRAINT link_state_event_seq_check CHECK ((event_seq >= 0)),
    CONSTRAINT link_state_good_size_check CHECK ((good_size >= 0)),
    CONSTRAINT link_state_hash CHECK ((((body_hash IS NULL) = (hash_alg IS NULL)) AND ((hash_alg IS DISTINCT FROM 'md5'::text) OR (length(body_hash) = 16)) AND ((hash_alg IS DISTINCT FROM 'sha256'::text) OR (length(body_hash) = 32)))),
    CONSTRAINT link_state_hash_alg_check CHECK ((hash_alg = ANY (ARRAY['sha256'::text, 'md5'::text]))),
    CONSTRAINT link_state_outcome_check CHECK ((outcome = ANY (ARRAY['good'::text, 'failed'::text, 'inconclusive'::text]))),
    CONSTRAINT link_state_redirects_check CHECK ((redirects >= 0)),
    CONSTRAINT link_state_size_check CHECK ((size >= 0)),
    CONSTRAINT link_state_status_code_check CHECK (((status_code >= 100) AND (status_code <= 999)))
);

--
-- Name: manager; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.manager (
    id bigint NOT NULL,
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    name text NOT NULL,
    default_shoulder_id bigint,
    commitment_level text,
    quota_per_day integer,
    active boolean DEFAULT true NOT NULL,
    succeeded_by_id bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    departed_at timestamp with time zone,
    CONSTRAINT manager_commitment_level_check CHECK ((commitment_level = ANY (ARRAY['Permanent: Unchanging Content'::text, 'Permanent: Stable Content'::text, 'Permanent: Dynamic Content'::text, 'Not Guaranteed'::text]))),
    CONSTRAINT manager_departed CHECK (((departed_at IS NULL) OR ((NOT active) AND (default_shoulder_id IS NULL)))),
    CONSTRAINT manager_quota_per_day_check CHECK ((quota_per_day > 0)),
    CONSTRAINT manager_successor_departed CHECK (((succeeded_by_id IS NULL) OR (departed_at IS NOT NULL)))
);

--
-- Name: manager_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.manager ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.manager_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: mint_one_tally; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mint_one_tally (
    shoulder_id bigint NOT NULL,
    manager_id bigint,
    day date NOT NULL,
    draws integer NOT NULL,
    collisions integer NOT NULL,
    CONSTRAINT mint_one_tally_collisions_check CHECK ((collisions >= 0)),
    CONSTRAINT mint_one_tally_draws_check CHECK ((draws >= 1))
);

--
-- Name: TABLE mint_one_tally; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.mint_one_tally IS 'Counts of single mints (ark_mint_one) not yet folded into shoulder_tally and mint_quota; the next mint folds them.';

--
-- Name: mint_quota; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mint_quota (
    manager_id bigint NOT NULL,
    day date NOT NULL,
    minted bigint DEFAULT 0 NOT NULL,
    CONSTRAINT mint_quota_minted_check CHECK ((minted >= 0))
);

--
-- Name: mint_receipt; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.mint_receipt AS
 SELECT ark.created_by AS client_pk,
    ark.request_id,
    ark.ark,
    ark.payload_digest,
    ark.created_at
   FROM public.ark
  WHERE (ark.request_id IS NOT NULL);

--
-- Name: VIEW mint_receipt; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON VIEW public.mint_receipt IS 'Every mint receipt, wherever the ledger''s layout keeps it: (client, request ID) -> ARK, with the payload digest and when.';

--
-- Name: naan; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.naan (
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    name text,
    is_authoritative boolean DEFAULT true NOT NULL,
    redirect text,
    na_policy text,
    minter text,
    who text,
    erc_where text,
    note text,
    registered_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    import_run_id bigint,
    CONSTRAINT naan_naan_check CHECK (((naan)::text ~ '^[0-9bcdfghjkmnpqrstvwxz]+$'::text))
);

--
-- Name: receipt; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.receipt (
    client_pk bigint NOT NULL,
    request_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    payload_digest bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT receipt_on_ark_row CHECK (false),
    CONSTRAINT receipt_payload_digest_check CHECK ((length(payload_digest) = 16))
);

--
-- Name: TABLE receipt; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.receipt IS 'Empty on this ledger (layout single), by constraint receipt_on_ark_row: a mint receipt is the ark row''s created_by, request_id and payload_digest; read them through mint_receipt.';

--
-- Name: schema_migration; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migration (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: shoulder; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shoulder (
    id bigint NOT NULL,
    naan character varying(16) NOT NULL COLLATE pg_catalog."C",
    shoulder character varying(255) NOT NULL COLLATE pg_catalog."C",
    manager_id bigint,
    redirect text,
    minter text,
    status text DEFAULT 'active'::text NOT NULL,
    check_zone text DEFAULT 'naan_name'::text NOT NULL,
    blade_length smallint DEFAULT 8 NOT NULL,
    note text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    retired_at timestamp with time zone,
    import_run_id bigint,
    blade_template character varying(64) COLLATE pg_catalog."C",
    adopted_at timestamp with time zone,
    CONSTRAINT shoulder_active_first_digit CHECK (((status <> 'active'::text) OR ((shoulder)::text ~ '^/[bcdfghjkmnpqrstvwxz]+[0-9]$'::text))),
    CONSTRAINT shoulder_blade_length_check CHECK (((blade_length >= 1) AND (blade_length <= 64))),
    CONSTRAINT shoulder_blade_template CHECK (((blade_template IS NULL) OR (((blade_template)::text ~ '^[de]+$'::text) AND (length((blade_template)::text) = blade_length)))),
    CONSTRAINT shoulder_check_zone_check CHECK ((check_zone = ANY (ARRAY['naan_name'::text, 'name_only'::text, 'none'::text]))),
    CONSTRAINT shoulder_retired_at CHECK (((status = 'retired'::text) = (retired_at IS NOT NULL))),
    CONSTRAINT shoulder_shoulder_check CHECK (((shoulder)::text ~ '^/'::text)),
    CONSTRAINT shoulder_status_check CHECK ((status = ANY (ARRAY['active'::text, 'reserved'::text, 'delegated'::text, 'retired'::text])))
);

--
-- Name: shoulder_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.shoulder ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.shoulder_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: shoulder_tally; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shoulder_tally (
    shoulder_id bigint NOT NULL,
    draws bigint DEFAULT 0 NOT NULL,
    collisions bigint DEFAULT 0 NOT NULL,
    CONSTRAINT shoulder_tally_collisions_check CHECK ((collisions >= 0)),
    CONSTRAINT shoulder_tally_draws_check CHECK ((draws >= 0))
);

--
-- Name: unknown_subject; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.unknown_subject (
    id bigint NOT NULL,
    subject text NOT NULL,
    issuer text,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    seen bigint DEFAULT 1 NOT NULL,
    ip inet
);

--
-- Name: unknown_subject_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.unknown_subject ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.unknown_subject_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: update_receipt; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.update_receipt (
    ark character varying(272) NOT NULL COLLATE pg_catalog."C",
    client_pk bigint NOT NULL,
    request_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    change_seq integer,
    run bigint NOT NULL,
    CONSTRAINT update_receipt_digest_check CHECK ((length(digest) = 16))
);

--
-- Name: TABLE update_receipt; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.update_receipt IS 'The receipts of bulk changes (arkhe update): client, change request ID and ARK -> the digest of the change asked for, and the ARK_CHANGE seq it wrote (NULL: it changed nothing).';

--
-- Name: ark_change mark; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark_change ALTER COLUMN mark SET DEFAULT nextval('public.ark_change_mark'::regclass);

--
-- Name: ark_change ark_change_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark_change
    ADD CONSTRAINT ark_change_pkey PRIMARY KEY (ark, seq);

--
-- Name: ark ark_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark
    ADD CONSTRAINT ark_pkey PRIMARY KEY (ark);

--
-- Name: ark_update_stage ark_update_stage_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark_update_stage
    ADD CONSTRAINT ark_update_stage_pkey PRIMARY KEY (token, ark);

--
-- Name: ark_update_verdict ark_update_verdict_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark_update_verdict
    ADD CONSTRAINT ark_update_verdict_pkey PRIMARY KEY (token, ark);

--
-- Name: audit_event audit_event_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_event
    ADD CONSTRAINT audit_event_pkey PRIMARY KEY (id);

--
-- Name: audit_summary audit_summary_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_summary
    ADD CONSTRAINT audit_summary_pkey PRIMARY KEY (id);

--
-- Name: client client_client_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client
    ADD CONSTRAINT client_client_id_key UNIQUE (client_id);

--
-- Name: client client_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client
    ADD CONSTRAINT client_pkey PRIMARY KEY (id);

--
-- Name: credential credential_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.credential
    ADD CONSTRAINT credential_pkey PRIMARY KEY (id);

--
-- Name: credential credential_prefix_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.credential
    ADD CONSTRAINT credential_prefix_key UNIQUE (prefix);

--
-- Name: import_run import_run_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.import_run
    ADD CONSTRAINT import_run_pkey PRIMARY KEY (id);

--
-- Name: import_skipped import_skipped_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.import_skipped
    ADD CONSTRAINT import_skipped_pkey PRIMARY KEY (ark, import_run_id);

--
-- Name: key_session key_session_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.key_session
    ADD CONSTRAINT key_session_pkey PRIMARY KEY (backend);

--
-- Name: ledger_setting ledger_setting_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ledger_setting
    ADD CONSTRAINT ledger_setting_pkey PRIMARY KEY (name);

--
-- Name: link_event link_event_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_event
    ADD CONSTRAINT link_event_pkey PRIMARY KEY (ark, seq);

--
-- Name: link_exclusion link_exclusion_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_exclusion
    ADD CONSTRAINT link_exclusion_pkey PRIMARY KEY (id);

--
-- Name: link_state link_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_state
    ADD CONSTRAINT link_state_pkey PRIMARY KEY (ark);

--
-- Name: manager manager_id_naan_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_id_naan_key UNIQUE (id, naan);

--
-- Name: manager manager_naan_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_naan_name_key UNIQUE (naan, name);

--
-- Name: manager manager_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_pkey PRIMARY KEY (id);

--
-- Name: mint_quota mint_quota_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mint_quota
    ADD CONSTRAINT mint_quota_pkey PRIMARY KEY (manager_id, day);

--
-- Name: naan naan_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.naan
    ADD CONSTRAINT naan_pkey PRIMARY KEY (naan);

--
-- Name: receipt receipt_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.receipt
    ADD CONSTRAINT receipt_pkey PRIMARY KEY (client_pk, request_id);

--
-- Name: schema_migration schema_migration_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migration
    ADD CONSTRAINT schema_migration_pkey PRIMARY KEY (version);

--
-- Name: shoulder shoulder_id_manager_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_id_manager_id_key UNIQUE (id, manager_id);

--
-- Name: shoulder shoulder_id_naan_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_id_naan_key UNIQUE (id, naan);

--
-- Name: shoulder shoulder_naan_shoulder_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_naan_shoulder_key UNIQUE (naan, shoulder);

--
-- Name: shoulder shoulder_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_pkey PRIMARY KEY (id);

--
-- Name: shoulder_tally shoulder_tally_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder_tally
    ADD CONSTRAINT shoulder_tally_pkey PRIMARY KEY (shoulder_id);

--
-- Name: unknown_subject unknown_subject_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.unknown_subject
    ADD CONSTRAINT unknown_subject_pkey PRIMARY KEY (id);

--
-- Name: unknown_subject unknown_subject_subject_issuer_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.unknown_subject
    ADD CONSTRAINT unknown_subject_subject_issuer_key UNIQUE (subject, issuer);

--
-- Name: update_receipt update_receipt_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.update_receipt
    ADD CONSTRAINT update_receipt_pkey PRIMARY KEY (ark, client_pk, request_id);

--
-- Name: ark_change_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ark_change_at ON public.ark_change USING btree (at);

--
-- Name: ark_change_mark_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ark_change_mark_idx ON public.ark_change USING btree (mark);

--
-- Name: ark_receipt; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX ark_receipt ON public.ark USING btree (created_by, request_id) WITH (fillfactor='100') WHERE (request_id IS NOT NULL);

--
-- Name: ark_seq_brin; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ark_seq_brin ON public.ark USING brin (seq);

--
-- Name: import_skipped_name; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX import_skipped_name ON public.import_skipped USING btree (naan, assigned_name);

--
-- Name: link_exclusion_open; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX link_exclusion_open ON public.link_exclusion USING btree (COALESCE(manager_id, (0)::bigint), COALESCE(shoulder_id, (0)::bigint), COALESCE(host, ''::character varying)) WHERE (ended_at IS NULL);

--
-- Name: link_state_broken; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX link_state_broken ON public.link_state USING btree (ark) WHERE broken;

--
-- Name: link_state_checked; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX link_state_checked ON public.link_state USING btree (ark) WHERE (checked_at IS NOT NULL);

--
-- Name: link_state_due_failing; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX link_state_due_failing ON public.link_state USING btree (due_at, ark) WHERE failing;

--
-- Name: link_state_due_good; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX link_state_due_good ON public.link_state USING btree (due_at, ark) WHERE (NOT failing);

--
-- Name: ark_change ark_change_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_change_append_only BEFORE UPDATE ON public.ark_change FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: ark_change ark_change_keyed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_change_keyed AFTER INSERT ON public.ark_change REFERENCING NEW TABLE AS new_changes FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_ark_keyed();

--
-- Name: ark_change ark_change_link_repoint; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_change_link_repoint AFTER INSERT ON public.ark_change FOR EACH ROW WHEN (((new.after_url)::text IS DISTINCT FROM (new.before_url)::text)) EXECUTE FUNCTION public.arkhe_link_repoint();

--
-- Name: ark_change ark_change_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_change_no_delete BEFORE DELETE ON public.ark_change FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ark_change ark_change_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_change_no_truncate BEFORE TRUNCATE ON public.ark_change FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ark ark_keyed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_keyed AFTER INSERT ON public.ark REFERENCING NEW TABLE AS new_arks FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_ark_keyed();

--
-- Name: ark ark_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_no_delete BEFORE DELETE ON public.ark FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ark ark_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_no_truncate BEFORE TRUNCATE ON public.ark FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ark ark_notify_resolver; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_notify_resolver AFTER UPDATE ON public.ark FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_notify_resolver();

--
-- Name: ark ark_reach; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_reach AFTER INSERT ON public.ark REFERENCING NEW TABLE AS new_arks FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_ark_reach();

--
-- Name: ark ark_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ark_update BEFORE UPDATE ON public.ark FOR EACH ROW EXECUTE FUNCTION public.arkhe_ark_update();

--
-- Name: audit_event audit_event_actor; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_event_actor BEFORE INSERT ON public.audit_event FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_actor();

--
-- Name: audit_event audit_event_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_event_append_only BEFORE UPDATE ON public.audit_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: audit_event audit_event_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON public.audit_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: audit_event audit_event_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_event_no_truncate BEFORE TRUNCATE ON public.audit_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: audit_summary audit_summary_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_summary_append_only BEFORE UPDATE ON public.audit_summary FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: audit_summary audit_summary_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_summary_no_delete BEFORE DELETE ON public.audit_summary FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: audit_summary audit_summary_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_summary_no_truncate BEFORE TRUNCATE ON public.audit_summary FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: client client_audit; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER client_audit AFTER INSERT OR UPDATE ON public.client FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_registration();

--
-- Name: client client_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER client_no_delete BEFORE DELETE ON public.client FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: client client_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER client_no_truncate BEFORE TRUNCATE ON public.client FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: client client_reach; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER client_reach BEFORE INSERT OR UPDATE ON public.client FOR EACH ROW EXECUTE FUNCTION public.arkhe_client_reach();

--
-- Name: credential credential_audit; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER credential_audit AFTER INSERT OR UPDATE ON public.credential FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_registration();

--
-- Name: credential credential_kind; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER credential_kind BEFORE INSERT OR UPDATE ON public.credential FOR EACH ROW EXECUTE FUNCTION public.arkhe_credential_kind();

--
-- Name: credential credential_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER credential_no_delete BEFORE DELETE ON public.credential FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: credential credential_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER credential_no_truncate BEFORE TRUNCATE ON public.credential FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: import_run import_run_final; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_run_final BEFORE UPDATE ON public.import_run FOR EACH ROW EXECUTE FUNCTION public.arkhe_run_final();

--
-- Name: import_run import_run_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_run_no_delete BEFORE DELETE ON public.import_run FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: import_run import_run_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_run_no_truncate BEFORE TRUNCATE ON public.import_run FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: import_skipped import_skipped_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_skipped_append_only BEFORE UPDATE ON public.import_skipped FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: import_skipped import_skipped_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_skipped_no_delete BEFORE DELETE ON public.import_skipped FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: import_skipped import_skipped_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER import_skipped_no_truncate BEFORE TRUNCATE ON public.import_skipped FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ledger_setting ledger_setting_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ledger_setting_append_only BEFORE UPDATE ON public.ledger_setting FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: ledger_setting ledger_setting_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ledger_setting_no_delete BEFORE DELETE ON public.ledger_setting FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: ledger_setting ledger_setting_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER ledger_setting_no_truncate BEFORE TRUNCATE ON public.ledger_setting FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_event link_event_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_event_append_only BEFORE UPDATE ON public.link_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: link_event link_event_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_event_no_delete BEFORE DELETE ON public.link_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_event link_event_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_event_no_truncate BEFORE TRUNCATE ON public.link_event FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_exclusion link_exclusion_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_exclusion_no_delete BEFORE DELETE ON public.link_exclusion FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_exclusion link_exclusion_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_exclusion_no_truncate BEFORE TRUNCATE ON public.link_exclusion FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_exclusion link_exclusion_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_exclusion_update BEFORE UPDATE ON public.link_exclusion FOR EACH ROW EXECUTE FUNCTION public.arkhe_link_exclusion_update();

--
-- Name: link_state link_state_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_state_no_delete BEFORE DELETE ON public.link_state FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: link_state link_state_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER link_state_no_truncate BEFORE TRUNCATE ON public.link_state FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: manager manager_audit; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER manager_audit AFTER INSERT OR UPDATE ON public.manager FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_registration();

--
-- Name: manager manager_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER manager_no_delete BEFORE DELETE ON public.manager FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: manager manager_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER manager_no_truncate BEFORE TRUNCATE ON public.manager FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: manager manager_succession; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER manager_succession BEFORE UPDATE ON public.manager FOR EACH ROW EXECUTE FUNCTION public.arkhe_manager_update();

--
-- Name: mint_quota mint_quota_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER mint_quota_no_delete BEFORE DELETE ON public.mint_quota FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: mint_quota mint_quota_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER mint_quota_no_truncate BEFORE TRUNCATE ON public.mint_quota FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: mint_quota mint_quota_rises; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER mint_quota_rises BEFORE UPDATE ON public.mint_quota FOR EACH ROW EXECUTE FUNCTION public.arkhe_counter_rises();

--
-- Name: naan naan_audit; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER naan_audit AFTER INSERT OR UPDATE ON public.naan FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_registration();

--
-- Name: naan naan_import_registration; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER naan_import_registration BEFORE INSERT OR UPDATE ON public.naan FOR EACH ROW EXECUTE FUNCTION public.arkhe_import_registration();

--
-- Name: naan naan_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER naan_no_delete BEFORE DELETE ON public.naan FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: naan naan_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER naan_no_truncate BEFORE TRUNCATE ON public.naan FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: naan naan_notify_resolver; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER naan_notify_resolver AFTER UPDATE ON public.naan FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_notify_resolver();

--
-- Name: receipt receipt_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER receipt_append_only BEFORE UPDATE ON public.receipt FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_update();

--
-- Name: receipt receipt_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER receipt_no_delete BEFORE DELETE ON public.receipt FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: receipt receipt_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER receipt_no_truncate BEFORE TRUNCATE ON public.receipt FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: shoulder shoulder_audit; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_audit AFTER INSERT OR UPDATE ON public.shoulder FOR EACH ROW EXECUTE FUNCTION public.arkhe_audit_registration();

--
-- Name: shoulder shoulder_id_fixed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_id_fixed BEFORE UPDATE OF id ON public.shoulder FOR EACH ROW WHEN ((new.id IS DISTINCT FROM old.id)) EXECUTE FUNCTION public.arkhe_shoulder_id_fixed();

--
-- Name: shoulder shoulder_import_registration; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_import_registration BEFORE INSERT OR UPDATE ON public.shoulder FOR EACH ROW EXECUTE FUNCTION public.arkhe_import_registration();

--
-- Name: shoulder shoulder_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_no_delete BEFORE DELETE ON public.shoulder FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: shoulder shoulder_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_no_truncate BEFORE TRUNCATE ON public.shoulder FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: shoulder_tally shoulder_tally_no_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_tally_no_delete BEFORE DELETE ON public.shoulder_tally FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: shoulder_tally shoulder_tally_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_tally_no_truncate BEFORE TRUNCATE ON public.shoulder_tally FOR EACH STATEMENT EXECUTE FUNCTION public.arkhe_refuse_delete();

--
-- Name: shoulder_tally shoulder_tally_rises; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_tally_rises BEFORE UPDATE ON public.shoulder_tally FOR EACH ROW EXECUTE FUNCTION public.arkhe_counter_rises();

--
-- Name: shoulder shoulder_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shoulder_update BEFORE UPDATE ON public.shoulder FOR EACH ROW EXECUTE FUNCTION public.arkhe_shoulder_update();

--
-- Name: ark_change ark_change_ark_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ark_change
    ADD CONSTRAINT ark_change_ark_fkey FOREIGN KEY (ark) REFERENCES public.ark(ark);

--
-- Name: client client_manager_id_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client
    ADD CONSTRAINT client_manager_id_naan_fkey FOREIGN KEY (manager_id, naan) REFERENCES public.manager(id, naan);

--
-- Name: client client_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client
    ADD CONSTRAINT client_naan_fkey FOREIGN KEY (naan) REFERENCES public.naan(naan);

--
-- Name: client client_shoulder_id_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client
    ADD CONSTRAINT client_shoulder_id_naan_fkey FOREIGN KEY (shoulder_id, naan) REFERENCES public.shoulder(id, naan);

--
-- Name: credential credential_client_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.credential
    ADD CONSTRAINT credential_client_pk_fkey FOREIGN KEY (client_pk) REFERENCES public.client(id);

--
-- Name: import_run import_run_client_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.import_run
    ADD CONSTRAINT import_run_client_pk_fkey FOREIGN KEY (client_pk) REFERENCES public.client(id);

--
-- Name: link_exclusion link_exclusion_manager_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_exclusion
    ADD CONSTRAINT link_exclusion_manager_id_fkey FOREIGN KEY (manager_id) REFERENCES public.manager(id);

--
-- Name: link_exclusion link_exclusion_shoulder_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_exclusion
    ADD CONSTRAINT link_exclusion_shoulder_id_fkey FOREIGN KEY (shoulder_id) REFERENCES public.shoulder(id);

--
-- Name: manager manager_default_shoulder_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_default_shoulder_fk FOREIGN KEY (default_shoulder_id, id) REFERENCES public.shoulder(id, manager_id) DEFERRABLE INITIALLY DEFERRED;

--
-- Name: manager manager_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_naan_fkey FOREIGN KEY (naan) REFERENCES public.naan(naan);

--
-- Name: manager manager_succeeded_by_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.manager
    ADD CONSTRAINT manager_succeeded_by_id_fkey FOREIGN KEY (succeeded_by_id) REFERENCES public.manager(id);

--
-- Name: mint_quota mint_quota_manager_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mint_quota
    ADD CONSTRAINT mint_quota_manager_id_fkey FOREIGN KEY (manager_id) REFERENCES public.manager(id);

--
-- Name: receipt receipt_client_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.receipt
    ADD CONSTRAINT receipt_client_pk_fkey FOREIGN KEY (client_pk) REFERENCES public.client(id);

--
-- Name: shoulder shoulder_manager_id_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_manager_id_naan_fkey FOREIGN KEY (manager_id, naan) REFERENCES public.manager(id, naan);

--
-- Name: shoulder shoulder_naan_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder
    ADD CONSTRAINT shoulder_naan_fkey FOREIGN KEY (naan) REFERENCES public.naan(naan);

--
-- Name: shoulder_tally shoulder_tally_shoulder_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shoulder_tally
    ADD CONSTRAINT shoulder_tally_shoulder_id_fkey FOREIGN KEY (shoulder_id) REFERENCES public.shoulder(id);
