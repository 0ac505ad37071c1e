-- arkhe ledger, version 15: only the owner reads the keys, and the schema says where receipts are.
--
-- Keys. No role but the owner reads a key's hash (credential.hashed) or a session's token
-- (key_session.token). The writer reads no column of credential at all, not even its rows'
-- number: it proves a key through the SECURITY DEFINER functions arkhe_key_params and
-- arkhe_key_login, and learns until when a key is locked through arkhe_key_locked_until. The
-- operator (who issues, lists and revokes keys) and the auditor read every column of credential
-- but hashed.
--
-- Receipts. Both layouts have one description, so both have the receipt table and the ark row's
-- receipt columns; each layout fills one of them. On one node (layout 'single') a mint receipt
-- is the ark row's created_by, request_id and payload_digest, unique through the partial index
-- ark_receipt: the receipt table holds none there, and a constraint now refuses every row of it.
-- On Citus a receipt is a row of the receipt table and the ark row carries none
-- (ark_receipt_elsewhere). mint_receipt reads the receipts wherever the layout keeps them; the
-- tables' comments say so to whoever reads the catalog.

-- ---------------------------------------------------------------- keys

-- Until when API key p_prefix is locked after too many wrong attempts in a row; null when it is
-- not locked now (or there is no such key). Runs as the owner: the caller needs no privilege on
-- credential.
create function arkhe_key_locked_until(p_prefix text) returns timestamptz
language sql stable security definer as $$
    select locked_until from credential
    where prefix = p_prefix and kind = 'api_key' and locked_until > now()
$$;

-- The roles' privileges, on top of those granted before (kept under a name of their own and
-- called first): the writer loses every column of credential; whoever proves a key may ask until
-- when it is locked.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0015;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0015();
    -- revoking the table's privilege revokes it from each column too
    execute format('revoke select on credential from %I', w);
    execute format('grant execute on function arkhe_key_locked_until(text) to %I, %I, %I', p, w, a);
end $$;

revoke execute on function arkhe_grant_roles(), arkhe_key_locked_until(text) from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'arkhe_key_locked_until(text)'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;

-- ---------------------------------------------------------------- where receipts are

do $$
begin
    if arkhe_layout() = 'single' then
        -- every row refused (the table is empty: nothing has ever written it on this layout)
        alter table receipt add constraint receipt_on_ark_row check (false);
        comment on table receipt is
            'Empty on this ledger (layout single), by constraint receipt_on_ark_row: a mint receipt is the ark row''s created_by, request_id and payload_digest; read them through mint_receipt.';
        comment on column ark.request_id is
            'The mint receipt''s request ID (with created_by and payload_digest): unique per client through index ark_receipt; null on an imported ARK.';
    else
        comment on table receipt is
            'The mint receipts of this ledger (layout citus), distributed by request ID; the ark rows carry none (constraint ark_receipt_elsewhere). Read them through mint_receipt.';
        comment on column ark.request_id is
            'Always null on this ledger (layout citus): mint receipts are rows of table receipt.';
    end if;
    comment on view mint_receipt is
        'Every mint receipt, wherever the ledger''s layout keeps it: (client, request ID) -> ARK, with the payload digest and when.';
end $$;
