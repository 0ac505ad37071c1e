-- arkhe ledger, version 30: every role reads the bulk change's verdicts, as it reads its stage.
--
-- ark_update_verdict (version 26) holds the verdicts of the change rows of a batch in flight,
-- written and consumed by ark_update_apply in one transaction, so it is empty between batches,
-- as ark_update_stage is. Only the owner could read it, and a command that reads every table of
-- the ledger (arkhe sizing, as the auditor) stopped at it. The operator, the writer and the
-- auditor now read it as they read the stage; nobody but the function writes it.

alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0030;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0030();
    execute format('grant select on ark_update_verdict to %I, %I, %I', p, w, a);
end $$;

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
