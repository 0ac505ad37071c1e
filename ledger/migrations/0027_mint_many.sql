-- arkhe ledger, version 27: single mints of one client minted together (group commit).
--
-- A server that receives single mints of one client and key while a mint of theirs is under way
-- collects them and mints them in one statement, so in one transaction and one commit, with
-- ark_mint_many: each element is a mint as ark_mint_one makes it (key, receipt, reach, insert,
-- quota, audit event), in a block of its own (a subtransaction), so an element refused is rolled
-- back alone and answered with its SQLSTATE and message while the others are minted. Elements
-- are minted in order: a later element with the request ID of an earlier one is answered from
-- the earlier one's receipt (replayed, the same ARK; AK022 for another payload), and a name an
-- earlier element took is a collision of the later one, which tries its next candidate.
--
-- The counts of a shoulder without a daily quota are appended to mint_one_tally once per call
-- (one row per ARK minted, as ark_mint_one appends them) and folded once per call; a shoulder
-- under a quota counts and checks each element on its own, as before.
--
-- ark_mint_draw is the body both functions share (ark_mint_one as of version 20, its counts of a
-- shoulder without a quota left to the caller when p_tally is false, the layout given by the
-- caller, which reads it once); it runs as the owner and no other role executes it, so no
-- caller leaves counts out. ark_mint_one is ark_mint_draw with p_tally true.
-- arkhe_fold_mint_one_tally is the fold of version 20's step 5, which now sums the rows it
-- takes per shoulder and per manager and day, so a counter row is written once per fold.
--
-- At most 64 elements a call (22023 for more): each block that writes takes a subtransaction
-- ID, and a transaction of more than 64 overflows the server's per-backend cache of them.
--
-- New SQLSTATEs: none.

create function arkhe_fold_mint_one_tally() returns void language plpgsql security definer as $$
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

comment on function arkhe_fold_mint_one_tally() is
    'Folds mint_one_tally into shoulder_tally and mint_quota, one transaction at a time (the others skip it).';

create function ark_mint_draw(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[],
                              p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb, p_tally boolean,
                              p_citus boolean, out ark text, out replayed boolean, out collisions integer, out tally_manager_id bigint, out owed boolean)
language plpgsql security definer as $$
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

comment on function ark_mint_draw(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb, boolean, boolean) is
    'The mint of ark_mint_one and of each element of ark_mint_many; with p_tally false, the counts of a shoulder without a quota are left to the caller (owed).';

create or replace function ark_mint_one(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[],
                                        p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb,
                                        out ark text, out replayed boolean, out collisions integer)
language plpgsql security definer as $$
declare d record;
begin
    select * into d from ark_mint_draw(p_client_id, p_prefix, p_request_id, p_digest, p_shoulder_id, p_names, p_url, p_commitment,
                                       p_who, p_what, p_when, p_metadata, true, arkhe_layout() = 'citus');
    ark := d.ark;
    replayed := d.replayed;
    collisions := d.collisions;
end $$;

-- Element i of the arrays (all of one length n, 1 <= n <= 64) is one mint of client p_client_id
-- with key p_prefix, as ark_mint_one takes it; its candidate names are the next
-- p_name_counts[i] of p_names (the elements' names one after the other). One row per element,
-- in order: ord (i), and either ark, replayed and collisions, or code (the SQLSTATE) and message
-- of its refusal (ark null).
create function ark_mint_many(p_client_id text, p_prefix text, p_request_ids text[], p_digests bytea[], p_shoulder_ids bigint[],
                              p_names text[], p_name_counts integer[], p_urls text[], p_commitments text[], p_whos text[],
                              p_whats text[], p_whens text[], p_metadatas jsonb[])
returns table (ord integer, ark text, replayed boolean, collisions integer, code text, message text)
language plpgsql security definer as $$
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

comment on function ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[]) is
    'Mints up to 64 ARKs of client p_client_id in one statement, each as ark_mint_one would in a block of its own: one row per element, its ARK or its refusal.';

-- The writer mints many as it mints one; the shared body and the fold are the owner's.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0027;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0027();
    execute format('grant execute on function ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[]) to %I', w);
end $$;

revoke execute on function arkhe_grant_roles(), arkhe_fold_mint_one_tally(),
    ark_mint_draw(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb, boolean, boolean),
    ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[]) from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'arkhe_fold_mint_one_tally()',
                             'ark_mint_draw(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb, boolean, boolean)',
                             'ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb)',
                             'ark_mint_many(text, text, text[], bytea[], bigint[], text[], integer[], text[], text[], text[], text[], text[], jsonb[])'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;
