-- arkhe ledger, version 19: who may take an export's watermark.
--
-- arkhe_export_mark() (version 14) runs as the owner and holds a SHARE lock of ark and
-- ark_change until its caller's transaction ends: every writer waits for it meanwhile. A
-- function is executable by PUBLIC when it is created, so until now any login could hold the
-- ledger's writers back, the resolver's included, which reads only what resolution needs. From
-- this version on only the roles that export (operator, writer, auditor) and the owner may call
-- it; the resolver role and PUBLIC are refused (SQLSTATE 42501).

revoke execute on function arkhe_export_mark() from public;

alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0019;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0019();
    execute format('grant execute on function arkhe_export_mark() to %I, %I, %I', p, w, a);
end $$;

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
