-- arkhe ledger, version 16: the resolver role, which reads only what resolution reads.
--
-- arkhe serve answers every request with a point lookup of an ARK (and of its NAAN, its
-- shoulder and the shoulder's manager for a forward or a description). Its login needs no other
-- table and writes nothing: the resolver role reads those columns and the schema version (the
-- check every command makes before it works), and nothing else. `arkhe init --roles` creates it,
-- also on a ledger whose other roles came before it.

alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0016;

create function arkhe_grant_roles() returns void language plpgsql as $$
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

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
