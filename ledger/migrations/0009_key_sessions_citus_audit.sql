-- arkhe ledger, version 9: on a ledger that requires keys, the database itself refuses a write
-- for a client the session has not proved with the client's API key.
--
-- A session proves a key with arkhe_key_login (client, prefix, hash): the caller derives the
-- Argon2id hash of the secret it holds with the key's own salt and parameters (arkhe_key_params
-- hands out everything but the hash) and the ledger compares it as arkhe_key_verify does,
-- counting a failure and locking the key after too many in a row. On success the ledger records,
-- in key_session, that this session acts as the key's client. No role but the owner reads the
-- key hashes or the sessions' tokens; only the ledger's SECURITY DEFINER functions write
-- key_session.
--
-- A session is known by its backend. On one node: its process id, and a random token the ledger
-- hands the session in its own setting arkhe.key_session (a setting no other session can read)
-- and keeps only the SHA-256 of; a later session given the same process id does not hold the
-- token. On Citus an ARK's row is checked on the worker that holds its shard, which sees neither
-- the coordinator's settings nor its processes: there a session is known by its global process
-- id (citus_backend_gpid(), which the workers see for the coordinator's session) and its login
-- role. Citus lets a session name any global process id (application_name 'citus_internal
-- gpid=N'), so on Citus a proved key admits the sessions of the login role that proved it while
-- that session lives: give each program a login role of its own and bind its client to it
-- (client.db_role). A record stands until its session logs out (arkhe_key_logout), proves
-- another key, or is found ended by the next arkhe_key_login on its node.
--
-- With require_keys on, a statement that inserts ARKs, or ARK_CHANGE rows (ark_repoint,
-- ark_tombstone, ark_apply_export), for a client the session has not proved is refused with
-- AK009; so is an import without a client, unless the session registers (the operator or owner
-- role, or the single operator of a ledger without roles). A superuser, and the owner (who may
-- disable triggers), remain able to bypass every check: they are the ledger's administrators.
--
-- New SQLSTATE:
--   AK009 the ledger requires keys and this session has not proved the client's API key

-- ---------------------------------------------------------------- the sessions that proved a key

create table key_session (
    backend       bigint primary key,        -- process id (one node) or global process id (Citus)
    token         bytea,                     -- SHA-256 of the session's token (one node only)
    login         text not null,             -- session_user of the session that proved the key
    client_pk     bigint not null,
    prefix        text collate "C" not null, -- the key that was proved
    at            timestamptz not null default now()
);

do $$
begin
    if arkhe_layout() = 'citus' then
        -- every node checks the rows of its own shards: the record is on every node
        perform create_reference_table('key_session');
    end if;
end $$;

-- This session's backend: its process id on one node, its global process id on Citus (the same
-- on the coordinator and on the workers acting for it).
create function arkhe_session_backend() returns bigint language plpgsql stable as $$
begin
    if arkhe_layout() = 'citus' then
        return citus_backend_gpid();
    end if;
    return pg_backend_pid();
end $$;

-- Whether the ledger requires keys for writing (arkhe init --require-keys).
create function arkhe_keys_required() returns boolean language sql stable as $$
    select exists (select 1 from ledger_setting where name = 'require_keys' and value = 'on')
$$;

-- The client (client.id) this session proved with an API key, or null. On one node the record
-- must carry this session's login role and the SHA-256 of its token. On a Citus worker, a row
-- written inside the ledger's SECURITY DEFINER functions (ark_repoint, ...) arrives over the
-- owner's connection, so there the owner stands for the login role that called them.
create function arkhe_session_client() returns bigint language sql stable security definer as $$
    select k.client_pk from key_session k
    where k.backend = arkhe_session_backend()
      and case when arkhe_layout() = 'citus' then k.login = session_user or session_user = arkhe_role('owner')
               else k.login = session_user
                    and k.token = sha256(convert_to(coalesce(current_setting('arkhe.key_session', true), ''), 'UTF8')) end
$$;

-- Proves API key p_prefix of client p_client_id for this session: p_hash is checked as
-- arkhe_key_verify checks it (a failure is counted, and locks the key after 10 in a row) and
-- its verdict returned. 'ok' records that this session acts as the client (on one node with a
-- new token in the session's setting arkhe.key_session); any other verdict removes what this
-- session had proved before. Records of sessions that have ended on this node are removed first.
create function arkhe_key_login(p_client_id text, p_prefix text, p_hash bytea)
returns text language plpgsql security definer as $$
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

-- Forgets what this session proved (a session that ends without it is forgotten by the next
-- arkhe_key_login on its node).
create function arkhe_key_logout() returns void language sql security definer as $$
    delete from key_session where backend = arkhe_session_backend();
    select set_config('arkhe.key_session', '', false);
$$;

-- ---------------------------------------------------------------- the check, per statement

-- With require_keys on, refuses (AK009) a statement inserting ARKs (created_by) or ARK_CHANGE
-- rows (by_client) for a client this session has not proved; rows without a client pass only for
-- a session that registers. Checked once per statement on the transition table, which is never
-- joined with another table, so it works on a Citus worker, where it fires per shard.
create function arkhe_ark_keyed() returns trigger language plpgsql as $$
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
end $$;

-- ---------------------------------------------------------------- registration changes on Citus

-- Whether this trigger runs in the session that made the change, on its own node's placement of
-- a Citus reference table: the backend is the one its global process id names, on this node.
-- The other placements run on behalf of that session, as tasks of its distributed transaction,
-- and may not write a table themselves.
create function arkhe_initiating_placement() returns boolean language plpgsql stable as $$
declare g bigint := citus_backend_gpid();
begin
    return g % 10000000000 = pg_backend_pid()
       and g / 10000000000 = (select n.nodeid from pg_dist_node n join pg_dist_local_group l using (groupid)
                              where n.noderole = 'primary' order by n.nodeid limit 1);
end $$;

-- As in version 5, and on Citus too: a reference table's triggers fire on each of its placements,
-- and the one on the placement of the node the session is connected to (the coordinator, or a
-- worker taking writes) records the change in audit_event, in the changing transaction, as on
-- one node. So a registration change made in plain SQL leaves its trace on both layouts (on
-- Citus but for the credential rows, whose key events are recorded on one node only). A
-- node of the cluster that holds no placement of the reference tables (a coordinator not
-- registered with citus_set_coordinator_host) records nothing: arkhe's Citus layout registers
-- it.
create or replace function arkhe_audit_registration() returns trigger language plpgsql as $$
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
end $$;

-- ---------------------------------------------------------------- privileges

-- Every role reads who proved which key (not the tokens' hashes); only the ledger's functions
-- write key_session; whoever proves a key may log in and out.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0009;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0009();
    execute format('grant select (backend, login, client_pk, prefix, at) on key_session to %I, %I, %I', p, w, a);
    execute format('grant execute on function arkhe_key_login(text, text, bytea), arkhe_key_logout() to %I, %I, %I', p, w, a);
end $$;

revoke execute on function arkhe_grant_roles(), arkhe_key_login(text, text, bytea), arkhe_key_logout() from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'arkhe_session_backend()', 'arkhe_keys_required()',
                             'arkhe_session_client()', 'arkhe_key_login(text, text, bytea)',
                             'arkhe_key_logout()', 'arkhe_ark_keyed()', 'arkhe_initiating_placement()',
                             'arkhe_audit_registration()'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;

-- ---------------------------------------------------------------- triggers, last

do $$
begin
    -- on Citus, triggers on distributed tables need this (in the migration only)
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    create trigger ark_keyed after insert on ark referencing new table as new_arks
        for each statement execute function arkhe_ark_keyed();
    create trigger ark_change_keyed after insert on ark_change referencing new table as new_changes
        for each statement execute function arkhe_ark_keyed();
end $$;
