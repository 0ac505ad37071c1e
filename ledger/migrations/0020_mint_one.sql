-- arkhe ledger, version 20: one ARK minted at a time, for the online API.
--
-- ark_mint_one mints one ARK for client p_client_id, with its API key p_prefix (null for a caller
-- that authenticated the client otherwise), insert-only: it never
-- updates an ark row. The caller draws the candidate names (shoulder + blade + check character,
-- as a bulk mint draws them) and passes them in order; the first one the ledger does not hold is
-- minted, each one held already counts as a collision. In one statement, so in one transaction:
--
--   1. the key, when named: registered, the client's, active (not revoked), not locked (AK020);
--   2. the receipt: a request ID is required (22004 without: every ARK arkhe mints has its
--      receipt); a receipt of this client for it answers with its ARK
--      (replayed), provided the payload digest matches (AK022 when the request ID was used for
--      another payload); so a retried request returns the same ARK;
--   3. the reach: arkhe_check_actor (registered, active, unexpired, scope ark:mint, the shoulder
--      in reach, the manager active), then the insert, whose ark_reach trigger checks the same
--      registration again with the shoulder's status and holder;
--   4. the insert: the ark row with its receipt (one node: the row's own request_id and
--      payload_digest, unique by ark_receipt; Citus: a receipt row, unique by its key, written
--      first). Two requests with one request ID at once: the second waits on the first's key and
--      then finds its receipt, so one ARK is minted;
--   5. the counters, last. Under a manager with a daily quota: shoulder_tally and mint_quota
--      themselves, with quota_per_day enforced (AK021: a mint past it is rolled back whole); those
--      rows are locked until the mint commits, so a manager's quota'd mints commit one at a
--      time. Otherwise the mint appends its counts to mint_one_tally (an insert, which waits on
--      nobody) and folds what other mints committed there into shoulder_tally and mint_quota,
--      one folding transaction at a time (the others skip it): so mints commit together
--      (group commit), and the counters are exact once the queue is folded, which the next
--      mint does;
--   6. the audit event ark.mint, with the request ID.
--
-- It runs as the owner (it reads the key's row, which no other role reads), like ark_repoint; the
-- reach checks name the session's login role, whatever the function runs as.
--
-- arkhe_key_state tells a server, before any hashing, whose key a prefix is and whether it may be
-- used now: a locked or revoked key is refused without an Argon2id derivation.
--
-- All names taken: AK023, naming the collisions. On Citus a name inserted by a concurrent mint
-- between the look-up and the insert is a unique violation (23505): the caller draws again.
--
-- New SQLSTATEs:
--   AK020 the API key is unknown, revoked or locked
--   AK021 the manager's daily quota of new ARKs is used up
--   AK022 the request ID was used for another payload
--   AK023 every candidate name is taken

-- On Citus the table is distributed on one connection per node, so that the functions below may
-- be created in the same transaction.
do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    end if;
end $$;

-- Counts of single mints not yet folded into shoulder_tally and mint_quota (see step 5).
create table mint_one_tally (
    shoulder_id bigint not null,
    manager_id  bigint,
    day         date not null,
    draws       integer not null check (draws >= 1),
    collisions  integer not null check (collisions >= 0)
);

comment on table mint_one_tally is
    'Counts of single mints (ark_mint_one) not yet folded into shoulder_tally and mint_quota; the next mint folds them.';

do $$
begin
    if arkhe_layout() = 'citus' then
        perform create_distributed_table('mint_one_tally', 'shoulder_id', colocate_with => 'shoulder_tally');
    end if;
end $$;

create function ark_mint_one(p_client_id text, p_prefix text, p_request_id text, p_digest bytea, p_shoulder_id bigint, p_names text[],
                             p_url text, p_commitment text, p_who text, p_what text, p_when text, p_metadata jsonb,
                             out ark text, out replayed boolean, out collisions integer)
language plpgsql security definer as $$
declare
    k record; s record; c record; f record; got text; prior record; key text; q integer; used bigint; today date;
    now_ timestamptz := now(); citus boolean := arkhe_layout() = 'citus';
begin
    replayed := false;
    collisions := 0;
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
    else
        insert into mint_one_tally (shoulder_id, manager_id, day, draws, collisions)
        values (s.id, s.manager_id, today, collisions + 1, collisions);
        if pg_try_advisory_xact_lock(hashtext('arkhe.mint_one_tally')) then
            for f in delete from mint_one_tally returning mint_one_tally.shoulder_id, mint_one_tally.manager_id,
                                                          mint_one_tally.day, mint_one_tally.draws, mint_one_tally.collisions loop
                insert into shoulder_tally as t (shoulder_id, draws, collisions) values (f.shoulder_id, f.draws, f.collisions)
                on conflict (shoulder_id) do update set draws = t.draws + excluded.draws, collisions = t.collisions + excluded.collisions;
                if f.manager_id is not null then
                    insert into mint_quota as m (manager_id, day, minted) values (f.manager_id, f.day, 1)
                    on conflict (manager_id, day) do update set minted = m.minted + 1;
                end if;
            end loop;
        end if;
    end if;
    insert into audit_event (client_id, authority, action, target, detail)
    values (c.client_id, c.authority, 'ark.mint', 'ark:' || ark,
            jsonb_build_object('request_id', p_request_id, 'key', p_prefix, 'collisions', collisions));
end $$;

comment on function ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb) is
    'Mints one ARK, insert-only, for client p_client_id (with its API key p_prefix, if named): receipt, reach, counters, quota and audit event in one statement.';

-- Whose API key p_prefix is (client_id, subject_type) and its state now: 'active', 'revoked' or
-- 'locked' (until locked_until); no row for a prefix that names no API key.
create function arkhe_key_state(p_prefix text, out client_id text, out subject_type text, out state text,
                                out locked_until timestamptz)
returns setof record language sql stable security definer as $$
    select l.client_id, l.subject_type,
           case when not c.active then 'revoked'
                when c.locked_until is not null and c.locked_until > now() then 'locked'
                else 'active' end,
           c.locked_until
      from credential c join client l on l.id = c.client_pk
     where c.prefix = p_prefix and c.kind = 'api_key'
$$;

-- The writer mints; every role reads a key's state, as it reads its parameters, and the counts
-- not yet folded.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0020;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0020();
    execute format('grant execute on function ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb) to %I', w);
    execute format('grant execute on function arkhe_key_state(text) to %I, %I, %I', p, w, a);
    execute format('grant select on mint_one_tally to %I, %I, %I', p, w, a);
end $$;

revoke execute on function arkhe_grant_roles(), ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb),
    arkhe_key_state(text) from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'ark_mint_one(text, text, text, bytea, bigint, text[], text, text, text, text, text, jsonb)',
                             'arkhe_key_state(text)'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;
