-- arkhe ledger, version 29: a change to what the resolver reads is announced.
--
-- arkhe serve may hold the rows of ARKs it answered (an exact match of a request: the ARK's
-- columns and its NAAN's policy and name). An ARK is never deleted, so such a row stays an ARK;
-- only its content changes (a repoint, a tombstone, a change of its description) and its NAAN's
-- row. On the single layout every UPDATE statement on ark or on naan now ends with
-- pg_notify('arkhe_resolver', ''), delivered when its transaction commits, folded into one per
-- transaction; a resolver listening on that channel drops what it holds. The trigger is per
-- statement, so a bulk change costs one notification, not one per row. A shoulder's row is not
-- among what the resolver holds, so its changes announce nothing. NOTIFY needs no privilege: the
-- function runs as whoever updates (the owner, or a SECURITY DEFINER change function). On the
-- citus layout no trigger is made: the rows live on the workers, whose notifications would
-- reach no listener of the coordinator; a resolver there holds nothing.

create function arkhe_notify_resolver() returns trigger language plpgsql as $$
begin
    perform pg_notify('arkhe_resolver', '');
    return null;
end $$;

do $$
begin
    execute format('alter function arkhe_notify_resolver() set search_path = %I, pg_temp', current_schema());
    if arkhe_layout() = 'single' then
        create trigger ark_notify_resolver after update on ark
            for each statement execute function arkhe_notify_resolver();
        create trigger naan_notify_resolver after update on naan
            for each statement execute function arkhe_notify_resolver();
    end if;
end $$;
