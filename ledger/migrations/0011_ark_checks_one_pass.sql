-- arkhe ledger: a statement's new ARKs are checked in one pass over them.
--
-- On the single layout two statement triggers each grouped a statement's new rows: ark_in_shoulder
-- (every ARK belongs to a registered shoulder of its own NAAN) and ark_reach (the client may mint
-- or import there). ark_reach now makes both checks over one grouping, by (shoulder, client,
-- NAAN, minted or imported), and ark_in_shoulder is dropped. The promises are unchanged and are
-- checked in the same order: first that every group's shoulder is registered for its NAAN
-- (foreign_key_violation, 23503, the statement refused whole), then each group's reach (AK006,
-- AK004). The ARK an error names is looked up only when a check fails: for an unregistered
-- shoulder one of the group's ARKs, for a refused reach the group's first in ARK order, as
-- before. On the citus layout the foreign key to shoulder stays and refuses first; the
-- shoulder check here then never fails.

create or replace function arkhe_ark_reach() returns trigger language plpgsql as $$
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
end $$;

do $$
begin
    if arkhe_layout() = 'single' then
        drop trigger ark_in_shoulder on ark;
        drop function arkhe_ark_in_shoulder();
    end if;
end $$;
