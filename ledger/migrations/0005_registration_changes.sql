-- arkhe ledger, version 5: registrations change; managers depart and are succeeded.
--
-- A manager that leaves is recorded, never deleted: manager.departed_at says when. A departed
-- manager is inactive for ever and holds no default shoulder; it may name a successor
-- (succeeded_by_id), set once. An inactive manager (departed, succeeded, or set inactive) acts
-- for nobody: its clients mint, import, repoint and tombstone nothing, and its shoulders keep
-- their ARKs and mint nothing until another manager holds them. A successor's clients with scope
-- ark:update or ark:tombstone may repoint and tombstone the ARKs of the shoulders a predecessor
-- holds, along the chain of successions (A succeeded by B, B by C: C's clients reach A's ARKs);
-- minting there stays the holder's. A departed manager without a successor leaves its ARKs to
-- the NAAN's authority (clients of authority naan or system).
--
-- A successor is a manager of the same NAAN. The NAAN and the name together are an ARK's
-- immutable identifier, and the NAAN stands for the organisation that answers for every name
-- assigned under it (draft-kunze-ark §2.3). When a collection moves to another institution, the
-- EZID and N2T way keeps its ARKs under their NAAN and changes where they lead: their targets, a
-- shoulder's delegation, or the NAAN's own record in the NAAN registry (holder, resolver). A
-- successor in another NAAN would let another authority's clients change ARKs this NAAN answers
-- for; so a manager moving institutions is succeeded by a manager registered for the new
-- institution under the same NAAN (a manager's name is internal), and the NAAN holder keeps the
-- last word.
--
-- A client's reach gains its expiry: an update that sets a later expiry, or removes it, widens
-- the client, which (like a scope added or a pin removed or moved) is the operator role's
-- decision.
--
-- New SQLSTATE:
--   AK008 a succession refused: the successor must be another active manager of the same NAAN,
--         and a chain of successions never comes back to a manager on it
-- AK003 (one-way) covers a manager's departure and succession too.

-- ---------------------------------------------------------------- columns and constraints

-- when the manager left (departed or was succeeded); null for a manager that has not left
alter table manager add column departed_at timestamptz;

-- a manager given a successor in plain SQL before this version departed when it was registered
-- (arkhe never set a successor before)
update manager set departed_at = created_at, active = false, default_shoulder_id = null
where succeeded_by_id is not null and departed_at is null;

alter table manager add constraint manager_departed
    check (departed_at is null or (not active and default_shoulder_id is null));
alter table manager add constraint manager_successor_departed
    check (succeeded_by_id is null or departed_at is not null);

-- ---------------------------------------------------------------- succession

-- Whether manager p_successor succeeded manager p_manager, directly or along the chain of
-- successions (p_manager's successor, that one's successor, ...). False when either is null and
-- for a manager and itself.
create function arkhe_succeeds(p_successor bigint, p_manager bigint) returns boolean
language plpgsql stable as $$
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

-- A manager's departure (departed_at) and its successor (succeeded_by_id) are one-way (AK003):
-- set once, never changed or removed. A successor is another manager of the same NAAN, active,
-- whose own chain of successions does not lead back to the manager (AK008). Successions are
-- made one at a time, ledger-wide (an advisory lock held to the end of the transaction), so the
-- chain read here is the committed one: two concurrent successions cannot close a cycle.
create function arkhe_manager_update() returns trigger language plpgsql as $$
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

-- ---------------------------------------------------------------- ARKs: reach

-- As in version 3, and: a client of an inactive manager (departed, succeeded or set inactive)
-- mints and imports nothing, and a shoulder whose manager is inactive mints nothing, whoever the
-- client (its ARKs stay; it mints again once an active manager holds it).
create or replace function arkhe_ark_reach() returns trigger language plpgsql as $$
declare g record; c record; s record; cm record; sm record;
begin
    for g in select n.shoulder_id, n.created_by, n.naan, min(n.ark) as ark, n.import_run_id is null as minted
             from new_arks n
             where n.import_run_id is null or n.created_by is not null
             group by n.shoulder_id, n.created_by, n.naan, n.import_run_id is null loop
        select id, status, shoulder, naan, manager_id into s from shoulder where id = g.shoulder_id;
        select id, client_id, active, expires_at, allowed_scopes, shoulder_id, authority, naan, manager_id, db_role
          into c from client where id = g.created_by;
        select name, active into cm from manager where id = c.manager_id;
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
            if cm.active is false then
                raise exception using errcode = 'AK004',
                    message = format('import of %s refused: client %s acts for manager %s, which is no longer active (departed, succeeded or set inactive)',
                                     g.ark, c.client_id, cm.name);
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
        if cm.active is false then
            raise exception using errcode = 'AK004',
                message = format('mint of %s refused: client %s acts for manager %s, which is no longer active (departed, succeeded or set inactive)',
                                 g.ark, c.client_id, cm.name);
        end if;
        select name, active into sm from manager where id = s.manager_id;
        if sm.active is false then
            raise exception using errcode = 'AK004',
                message = format('mint of %s refused: shoulder %s of NAAN %s is held by manager %s, which is no longer active (departed, succeeded or set inactive); the shoulder keeps its ARKs and mints again once an active manager holds it',
                                 g.ark, s.shoulder, g.naan, sm.name);
        end if;
    end loop;
    return null;
end $$;

-- As in version 3, and: a client of an inactive manager acts for nobody; a client of authority
-- manager reaches, for a repoint (ark:update) or a tombstone (ark:tombstone), the shoulders of
-- every manager its manager succeeded, along the chain (arkhe_succeeds).
create or replace function arkhe_check_actor(p_client bigint, p_scope text, p_shoulder bigint, p_ark text, p_what text)
returns void language plpgsql stable as $$
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

-- ---------------------------------------------------------------- clients: reach, widening, binding

-- As in version 3, with the expiry part of reach: an update may narrow a client's reach;
-- widening it (authority, manager, a pinned shoulder removed or moved, a scope added, a later
-- expiry or none, or moving or removing its database role) is the operator role's decision: the
-- session must be in the operator role. A ledger without roles has no operator, so there reach
-- is never widened (register a new client). A database role the client is bound to must exist.
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

-- ---------------------------------------------------------------- the audit vocabulary

-- As in version 3, with manager.depart: a manager's departure without a successor. Records every
-- registration change in audit_event, in the changing transaction: action, target, and detail
-- {"before": {...}, "after": {...}} with the changed columns only (an insert: before null, after
-- the whole row). Actions:
--   naan.add naan.set | manager.add manager.set manager.enable manager.disable manager.succeed
--   manager.depart | shoulder.add shoulder.set shoulder.retire | client.add client.set
--   client.enable client.disable | key.create key.revoke key.rehash key.fail key.lock
-- Targets: the NAAN; "NAAN manager-name"; "ark:NAAN/shoulder"; the client_id; the key's prefix
-- (its client in the detail). A key's successful use changes no registration and records
-- nothing. On a Citus shard (a reference table's placement) it records nothing: a shard may not
-- write another table; the change is recorded where it is made, on the coordinator.
create or replace function arkhe_audit_registration() returns trigger language plpgsql as $$
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

-- Every function of the ledger resolves names in the ledger's schema, with temporary objects
-- last (as version 3 set it; a replaced function loses the setting, so it is set again).
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
begin
    -- on Citus, triggers on reference tables need this (in the migration only)
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    create trigger manager_succession before update on manager
        for each row execute function arkhe_manager_update();
end $$;
