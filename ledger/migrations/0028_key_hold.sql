-- arkhe ledger, version 28: an API key held for the writes it allows.
--
-- A server checks a key's state and then writes with it; a revocation committed between the
-- two must not let the write through. arkhe_key_hold is arkhe_key_state for a transaction about
-- to write with API key p_prefix: it first takes a shared advisory lock of the key (class
-- hashtext('arkhe.key'), object hashtext(prefix)), held to the end of the transaction, then
-- reads the key's row. A revocation or a lock of the key (an UPDATE setting active to false or
-- locked_until to a time) takes the same lock exclusively, in the credential_kind trigger,
-- before it changes the row: it waits for the transactions holding the key, and one holding it
-- after the revocation committed reads the key revoked. So the state returned stays true for
-- every write of the holding transaction.
--
-- A lock, not FOR SHARE on the row: on Citus a row lock on a reference table locks its shard,
-- and every write with any key would wait for every other. The advisory lock is the node's
-- own; the trigger fires on every placement, so on every node, and the key's holder takes it
-- on the node its session runs on.

create function arkhe_key_hold(p_prefix text, out client_id text, out state text, out locked_until timestamptz)
returns setof record language plpgsql security definer as $$
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

revoke execute on function arkhe_key_hold(text) from public;

-- As in version 3, and a revocation or a lock of a key first waits for the transactions
-- holding it (arkhe_key_hold).
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
    if tg_op = 'UPDATE' and ((old.active and not new.active)
                             or (new.locked_until is not null and new.locked_until is distinct from old.locked_until)) then
        perform pg_advisory_xact_lock(hashtext('arkhe.key'), hashtext(old.prefix));
    end if;
    return new;
end $$;

do $$
declare f text;
begin
    foreach f in array array['arkhe_key_hold(text)', 'arkhe_credential_kind()'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;

alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0028;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0028();
    execute format('grant execute on function arkhe_key_hold(text) to %I, %I', p, w);
end $$;

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
