-- arkhe ledger, version 3: the database is the trust boundary.
--
-- Roles. `arkhe init --roles` creates four group roles (prefix + owner, operator, writer,
-- auditor), records their names in ledger_setting (role.owner, role.operator, role.writer,
-- role.auditor) and grants them their privileges with arkhe_grant_roles():
--   owner     owns every table and function: DDL and migrations (only `arkhe init` needs it);
--   operator  registration: NAANs, managers, shoulders, clients and their keys;
--   writer    mint, import, reconcile --apply, repoint and tombstone: inserts ARKs and their
--             counters, changes an ARK only through ark_repoint, ark_tombstone and
--             ark_apply_export (SECURITY DEFINER, owned by the owner); no DELETE, TRUNCATE,
--             ALTER, trigger control or UPDATE of ark;
--   auditor   reads everything (but the key hashes) and appends only its own audit records.
-- Logins are made members of them (grant <prefix>writer to alice). A ledger without roles is a
-- single-operator ledger: whoever connects owns it.
--
-- Who a session is: session_user, the login role that authenticated. It stays the same inside a
-- SECURITY DEFINER function (where current_user is the owner) and under SET ROLE, so a check
-- made inside the ledger's functions sees the caller. A session "is in" a role when its login
-- role is that role or a member of it, directly or through other roles (a superuser is in
-- every role: it can do anything anyway).
--
-- New SQLSTATEs:
--   AK006 the client is bound to a database role the session's login role is not a member of
--   AK007 an API key refused (unknown, revoked, locked, wrong)
--
-- Audit: audit_event gains the actor's database role (session_user, set by the database) and OS
-- user (as the client reported it in the setting arkhe.os_user). Registration changes (naan,
-- manager, shoulder, client, credential) are recorded by triggers, so that a change through plain
-- SQL leaves its trace too; a repoint or tombstone outside a run by the function that makes it.

-- ---------------------------------------------------------------- columns

-- the login role a client is bound to: only sessions whose login role is in it may act as the
-- client (mint, import, repoint, tombstone); null: any session with the writer's privileges
alter table client add column db_role varchar(63) collate "C";
alter table credential add column last_used_at timestamptz;
-- the actor's database role and OS user; null on the records written before this version
alter table audit_event add column db_role text;
alter table audit_event add column os_user text;
alter table audit_event alter column db_role set default session_user;
alter table audit_event alter column os_user set default nullif(current_setting('arkhe.os_user', true), '');
alter table ledger_setting add constraint ledger_setting_require_keys
    check (name <> 'require_keys' or value = 'on');

-- ---------------------------------------------------------------- who the session is

-- The role of kind (owner, operator, writer, auditor) the ledger's roles were created with;
-- null for a ledger without roles.
create function arkhe_role(p_kind text) returns text language sql stable as $$
    select value from ledger_setting where name = 'role.' || p_kind
$$;

-- Whether the session's login role (session_user) is p_role or a member of it, directly or
-- through other roles (a superuser is a member of every role, as PostgreSQL has it). False for
-- a null role or one that does not exist.
create function arkhe_session_in(p_role text) returns boolean language sql stable as $$
    select case when p_role is null or to_regrole(quote_ident(p_role)) is null then false
                else pg_has_role(session_user, to_regrole(quote_ident(p_role)), 'MEMBER') end
$$;

-- Whether the session registers: the ledger has no roles (a single-operator ledger), or the
-- session is in the operator or the owner role.
create function arkhe_registrar() returns boolean language sql stable as $$
    select arkhe_role('operator') is null
        or arkhe_session_in(arkhe_role('operator'))
        or arkhe_session_in(arkhe_role('owner'))
$$;

-- Refuses unless the session may act as client p_client on ARK p_ark of shoulder p_shoulder for
-- p_what (repoint, tombstone, apply): the client exists, is active and unexpired, holds p_scope,
-- reaches the shoulder (authority system; naan: the shoulder's NAAN; manager: a shoulder its
-- manager holds; a pinned client: that shoulder only) and, when it is bound to a database role,
-- the session is in that role (AK006). Without a client only a registrar may change an ARK.
create function arkhe_check_actor(p_client bigint, p_scope text, p_shoulder bigint, p_ark text, p_what text)
returns void language plpgsql stable as $$
declare c record; s record;
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
                       or (c.authority = 'manager' and c.manager_id = s.manager_id), false) then
        raise exception using errcode = 'AK004',
            message = format('%s of ARK %s refused: client %s (authority %s, scopes %s, %s) does not reach shoulder %s of NAAN %s with scope %s; reach comes from the client''s registration only',
                             p_what, p_ark, c.client_id, c.authority, array_to_string(c.allowed_scopes, ' '),
                             case when not c.active then 'not active'
                                  when c.expires_at is not null and c.expires_at <= now() then 'expired'
                                  else 'active' end,
                             s.shoulder, s.naan, p_scope);
    end if;
end $$;

-- ---------------------------------------------------------------- ARKs: reach and binding

-- Minted rows (import_run_id is null) must be within the minting client's registered reach, on an
-- active shoulder; imported rows that name a client need an active client holding ark:import.
-- Either way a client bound to a database role is refused (AK006) unless the session is in that
-- role. Checked once per statement: the transition table is grouped by (shoulder, client, minted
-- or imported), one group for a whole mint batch, and each group is looked up in the
-- registration tables. The transition table is never joined with another table, so the same
-- function works on a Citus worker, where it fires per shard.
create or replace function arkhe_ark_reach() returns trigger language plpgsql as $$
declare g record; c record; s record;
begin
    for g in select n.shoulder_id, n.created_by, n.naan, min(n.ark) as ark, n.import_run_id is null as minted
             from new_arks n
             where n.import_run_id is null or n.created_by is not null
             group by n.shoulder_id, n.created_by, n.naan, n.import_run_id is null loop
        select id, status, shoulder, naan, manager_id into s from shoulder where id = g.shoulder_id;
        select id, client_id, active, expires_at, allowed_scopes, shoulder_id, authority, naan, manager_id, db_role
          into c from client where id = g.created_by;
        if c.db_role is not null and not arkhe_session_in(c.db_role) then
            raise exception using errcode = 'AK006',
                message = format('%s of %s refused: client %s is bound to database role %s, and this session''s login role %s is not a member of it',
                                 case when g.minted then 'mint' else 'import' end, g.ark, c.client_id, c.db_role, session_user);
        end if;
        if not g.minted then
            if c.id is null or not c.active or (c.expires_at is not null and c.expires_at <= now())
               or not ('ark:import' = any (c.allowed_scopes)) then
                raise exception using errcode = 'AK004',
                    message = format('import of %s refused: client %s must be active and hold scope ark:import', g.ark, c.client_id);
            end if;
            continue;
        end if;
        if c.id is null or not c.active
           or (c.expires_at is not null and c.expires_at <= now())
           or not ('ark:mint' = any (c.allowed_scopes))
           or s.status is distinct from 'active'
           or (c.shoulder_id is not null and c.shoulder_id <> s.id)
           -- a shoulder without a manager is outside every manager's reach (no NULL slips through)
           or not coalesce(   c.authority = 'system'
                           or (c.authority = 'naan' and c.naan = s.naan)
                           or (c.authority = 'manager' and c.manager_id = s.manager_id), false) then
            raise exception using errcode = 'AK004',
                message = format('mint of %s refused: client %s may not mint in shoulder %s (status %s) of NAAN %s; reach comes from the client''s registration only',
                                 g.ark, coalesce(c.client_id, '(none)'), s.shoulder, s.status, g.naan);
        end if;
    end loop;
    return null;
end $$;

-- ---------------------------------------------------------------- clients: reach, widening, binding

-- An update may narrow a client's reach; widening it (authority, manager, pinned shoulder,
-- scopes, or moving or removing its database role) is the operator role's decision: the session
-- must be in the operator role. A ledger without roles has no operator, so there reach is never
-- widened (register a new client). A database role the client is bound to must exist.
create or replace function arkhe_client_reach() returns trigger language plpgsql as $$
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
            or (old.db_role is not null and new.db_role is distinct from old.db_role))
           and not arkhe_session_in(op) then
            raise exception using errcode = 'AK004',
                message = case when op is null then
                    format('client %s: reach (authority, manager, pinned shoulder, scopes, database role) may be narrowed but never widened on a ledger without roles; register a new client', old.client_id)
                else
                    format('client %s: widening a client''s reach (authority, manager, pinned shoulder, scopes, database role) is the operator role''s decision, and this session''s login role %s is not a member of %s', old.client_id, session_user, op)
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

-- ---------------------------------------------------------------- what an import may register

-- On a ledger with roles, a session that is not a registrar (a writer running an import) may
-- create only what an import brings: a NAAN, or a reserved shoulder without a manager, each
-- carrying its import run; and it may only fill a registered value that is empty, never change
-- one. (The writer's column privileges name the columns it may fill.)
create function arkhe_import_registration() returns trigger language plpgsql as $$
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
end $$;

-- ---------------------------------------------------------------- counters and run records

-- A writer upserts the mint counters (shoulder_tally, mint_quota), so it holds UPDATE on them:
-- its update may only raise a count, never lower one (giving quota back) or move it to another
-- key. Correcting a counter is a registrar's decision (the operator or owner role, or the single
-- operator of a ledger without roles).
create function arkhe_counter_rises() returns trigger language plpgsql as $$
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
end $$;

-- A run's record (import_run) is written when the run starts and completed once, when it
-- finishes; a finished run's record never changes.
create function arkhe_run_final() returns trigger language plpgsql as $$
begin
    if old.finished_at is not null then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of import_run refused: the record of a finished run never changes');
    end if;
    return new;
end $$;

-- ---------------------------------------------------------------- credentials

-- As before (a machine client holds no password, a person no API key; a credential never changes
-- owner, kind, prefix or secret, and a revoked one stays revoked), except that the secret's hash
-- may be replaced by arkhe_key_rehash, which alone sets arkhe.rehash to the key's prefix, with an
-- Argon2id hash in the PHC string format.
create or replace function arkhe_credential_kind() returns trigger language plpgsql as $$
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
    return new;
end $$;

-- The head of the PHC string of API key p_prefix: $argon2id$v=19$m=M,t=T,p=P$SALT, everything
-- but the hash, for the caller to derive the hash of the secret it holds and present it to
-- arkhe_key_verify. Null when there is no such API key. The hash itself never leaves the ledger.
create function arkhe_key_params(p_prefix text) returns text language sql stable security definer as $$
    select regexp_replace(hashed, '\$[^$]*$', '') from credential where prefix = p_prefix and kind = 'api_key'
$$;

-- Checks an API key: p_hash is the Argon2id hash of the secret, derived with the key's own
-- parameters and salt (arkhe_key_params). Returns
--   'ok'       the key is client p_client_id's, active, not locked, and the hash matches: the
--              failure count is reset and last_used_at set;
--   'unknown'  no API key with that prefix belongs to that client (nothing is counted);
--   'revoked'  the key was revoked;
--   'locked'   the key is locked (locked_until in the future): not compared, not counted;
--   'wrong'    the hash does not match: counted; the 10th failure in a row locks the key for
--              15 minutes and starts the count again.
-- A refusal is returned, never raised, so that the count is committed with the caller's
-- transaction. The hashes are compared through their SHA-256 (no timing tells the stored hash).
create function arkhe_key_verify(p_client_id text, p_prefix text, p_hash bytea)
returns text language plpgsql security definer as $$
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
end $$;

-- Replaces the hash of API key p_prefix of client p_client_id with p_new (an Argon2id PHC string,
-- e.g. with new parameters), for a caller that proves the key with p_hash as arkhe_key_verify
-- does (a failure counts as one there). Returns arkhe_key_verify's verdict; 'ok' means replaced.
create function arkhe_key_rehash(p_client_id text, p_prefix text, p_hash bytea, p_new text)
returns text language plpgsql security definer as $$
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

-- ---------------------------------------------------------------- the audit vocabulary

-- The actor of an audit record is set by the database: db_role is the session's login role and
-- at the transaction's time, whatever the inserting statement says, so that a role appends only
-- its own records. os_user is what the client reported (the setting arkhe.os_user). On a Citus
-- shard (a reference table's placement) the row is left as the coordinator sent it: there the
-- column defaults set the actor.
create function arkhe_audit_actor() returns trigger language plpgsql as $$
begin
    if tg_table_name <> 'audit_event' then
        return new;
    end if;
    new.db_role := session_user;
    new.at := now();
    new.os_user := coalesce(new.os_user, nullif(current_setting('arkhe.os_user', true), ''));
    return new;
end $$;

-- A registration row as an audit record shows it: internal keys replaced by the names they stand
-- for (manager, shoulder, client), the key hash and bookkeeping columns left out.
create function arkhe_audit_row(p_table text, r jsonb) returns jsonb language plpgsql stable as $$
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

-- Records every registration change in audit_event, in the changing transaction: action (see
-- below), target, and detail {"before": {...}, "after": {...}} with the changed columns only
-- (an insert: before null, after the whole row). Actions:
--   naan.add naan.set | manager.add manager.set manager.enable manager.disable manager.succeed |
--   shoulder.add shoulder.set shoulder.retire | client.add client.set client.enable client.disable |
--   key.create key.revoke key.rehash key.fail key.lock
-- Targets: the NAAN; "NAAN manager-name"; "ark:NAAN/shoulder"; the client_id; the key's prefix
-- (its client in the detail). A key's successful use changes no registration and records
-- nothing. On a Citus shard (a reference table's placement) it records nothing: a shard may not
-- write another table; the change is recorded where it is made, on the coordinator.
create function arkhe_audit_registration() returns trigger language plpgsql as $$
declare
    t text := tg_table_name;
    a jsonb; b jsonb; ch text[]; act text; tgt text;
    rehashed boolean := tg_op = 'UPDATE' and (to_jsonb(new)->>'hashed') is distinct from (to_jsonb(old)->>'hashed');
begin
    if t not in ('naan', 'manager', 'shoulder', 'client', 'credential') then
        return null;
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
            when ch = array['active'] then case when (a->>'active')::boolean then 'manager.enable' else 'manager.disable' end
            when 'succeeded_by' = any (ch) then 'manager.succeed'
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

-- ---------------------------------------------------------------- the change path, as the owner

-- The repoint path: appends ARK_CHANGE (before, after, when, by) and updates the target in one
-- transaction. Runs as the ledger's owner (SECURITY DEFINER): a writer may not update ark
-- itself. The caller must be able to act as p_by_client (arkhe_check_actor: scope ark:update, or
-- ark:import within a run p_import_run; reach; binding). A repoint outside a run is recorded in
-- audit_event (ark.repoint); a run's changes are recorded by its run event and ARK_CHANGE.
-- Returns false when the ARK already points there (no change, no row).
create or replace function ark_repoint(p_ark text, p_url text, p_by_client bigint, p_by_text text,
                                       p_at timestamptz default now(), p_import_run bigint default null)
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype;
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
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            by_client, by_text, import_run_id)
    values (p_ark, cur.change_seq + 1, p_at, 'update', cur.url, p_url, cur.status, cur.status,
            p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, updated_at = p_at, updated_by = p_by_client, change_seq = cur.change_seq + 1
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
-- scope ark:tombstone (arkhe_check_actor). Recorded in audit_event (ark.tombstone).
create or replace function ark_tombstone(p_ark text, p_reason text, p_by_client bigint, p_by_text text,
                                         p_at timestamptz default now())
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    perform arkhe_check_actor(p_by_client, 'ark:tombstone', cur.shoulder_id, p_ark, 'tombstone');
    if cur.status = 'unavailable' then
        return false;
    end if;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            reason, by_client, by_text)
    values (p_ark, cur.change_seq + 1, p_at, 'tombstone', cur.url, cur.url, cur.status, 'unavailable',
            p_reason, p_by_client, p_by_text);
    update ark set status = 'unavailable', tombstone_reason = p_reason, tombstoned_at = p_at,
                   updated_at = p_at, updated_by = p_by_client, change_seq = cur.change_seq + 1
    where ark = p_ark;
    insert into audit_event (client_id, authority, action, target, detail)
    select c.client_id, c.authority, 'ark.tombstone', 'ark:' || p_ark,
           jsonb_build_object('before', jsonb_build_object('status', cur.status),
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
-- (AK002). Returns false, writing nothing, when the ARK already holds every given value.
create or replace function ark_apply_export(p_ark text, p_url text, p_status text, p_reason text,
                                            p_who text, p_what text, p_when text, p_commitment text,
                                            p_metadata jsonb, p_by_client bigint, p_by_text text,
                                            p_import_run bigint, p_at timestamptz default now())
returns boolean language plpgsql security definer as $$
declare cur ark%rowtype; act text;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    perform arkhe_check_actor(p_by_client, 'ark:import', cur.shoulder_id, p_ark, 'apply');
    if cur.url is not distinct from p_url and cur.status = p_status
       and cur.tombstone_reason is not distinct from p_reason
       and cur.erc_who is not distinct from p_who and cur.erc_what is not distinct from p_what
       and cur.erc_when is not distinct from p_when and cur.commitment is not distinct from p_commitment
       and cur.metadata is not distinct from p_metadata then
        return false;
    end if;
    if p_status = 'reserved' and cur.status <> 'reserved' then
        raise exception using errcode = 'AK002',
            message = format('ARK %s: status %s never returns to reserved (a published name cannot be unpublished)', p_ark, cur.status);
    end if;
    act := case
        when p_status = 'unavailable' and (cur.status <> 'unavailable'
              or cur.tombstone_reason is distinct from p_reason) then 'tombstone'
        when p_status <> cur.status then 'restore'
        when p_url is distinct from cur.url then 'update'
        else 'metadata' end;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text, import_run_id)
    values (p_ark, cur.change_seq + 1, p_at, act, cur.url, p_url, cur.status, p_status, p_reason,
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
                   metadata = p_metadata, updated_at = p_at, updated_by = p_by_client,
                   change_seq = cur.change_seq + 1
    where ark = p_ark;
    return true;
end $$;

-- ---------------------------------------------------------------- privileges

-- Grants the roles recorded in ledger_setting their privileges (idempotent; `arkhe init` runs it
-- after every migration of a ledger with roles, as the owner). Every role reads every table but
-- the key hashes; the operator registers; the writer inserts ARKs, receipts, counters and import
-- runs, fills what an import registers, and changes ARKs only through the SECURITY DEFINER
-- functions; every role appends audit records (as itself), the auditor also audit summaries.
create function arkhe_grant_roles() returns void language plpgsql as $$
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

-- The change path and the key functions run as the owner: nobody else calls them unless granted.
revoke execute on function ark_repoint(text, text, bigint, text, timestamptz, bigint),
    ark_tombstone(text, text, bigint, text, timestamptz),
    ark_apply_export(text, text, text, text, text, text, text, text, jsonb, bigint, text, bigint, timestamptz),
    arkhe_key_params(text), arkhe_key_verify(text, text, bytea), arkhe_key_rehash(text, text, bytea, text),
    arkhe_grant_roles()
    from public;

-- Every function of the ledger resolves names in the ledger's schema, with temporary objects
-- last: a session's temporary table named like a ledger table (client, ark_change) cannot stand
-- in for it inside a trigger or a SECURITY DEFINER function.
do $$
declare f regprocedure;
begin
    for f in select p.oid::regprocedure from pg_proc p
             where p.pronamespace = (select oid from pg_namespace where nspname = current_schema())
               and (p.proname like 'arkhe\_%' or p.proname like 'ark\_%')
               and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e') loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;

-- ---------------------------------------------------------------- triggers, last

do $$
declare t text;
begin
    -- on Citus, triggers on distributed and reference tables need this (in the migration only)
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    create trigger audit_event_actor before insert on audit_event
        for each row execute function arkhe_audit_actor();
    create trigger naan_import_registration before insert or update on naan
        for each row execute function arkhe_import_registration();
    create trigger shoulder_import_registration before insert or update on shoulder
        for each row execute function arkhe_import_registration();
    create trigger shoulder_tally_rises before update on shoulder_tally
        for each row execute function arkhe_counter_rises();
    create trigger mint_quota_rises before update on mint_quota
        for each row execute function arkhe_counter_rises();
    create trigger import_run_final before update on import_run
        for each row execute function arkhe_run_final();
    foreach t in array array['naan', 'manager', 'shoulder', 'client', 'credential'] loop
        execute format('create trigger %I after insert or update on %I for each row execute function arkhe_audit_registration()',
                       t || '_audit', t);
    end loop;
end $$;
