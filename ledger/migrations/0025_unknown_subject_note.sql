-- arkhe ledger, version 25: recording a verified subject the ledger does not know.
--
-- A bearer token whose signature, issuer, audience and expiry verified, but whose authorized
-- party (azp) names no registered client, is refused; its issuer and subject are kept in
-- unknown_subject so an operator can register the client without retyping it. The writer (the
-- login of arkhe serve --api) reads that table only; arkhe_note_unknown_subject, run as the
-- owner, is its one way in: it inserts the pair or, when it is there already, moves last_seen to
-- now, adds one to seen and keeps the latest address. It returns the row's id and seen.

create function arkhe_note_unknown_subject(p_issuer text, p_subject text, p_ip inet,
                                           out id bigint, out seen bigint)
language plpgsql security definer as $$
declare t timestamptz := now();
begin
    -- plpgsql, not sql: Citus plans no parameterized statement of a SQL function, and wants
    -- no volatile function (now()) in the DO UPDATE SET clause, hence the variable
    insert into unknown_subject as u (subject, issuer, first_seen, last_seen, ip)
    values (p_subject, p_issuer, t, t, p_ip)
    on conflict (subject, issuer) do update
        set last_seen = t, seen = u.seen + 1, ip = coalesce(excluded.ip, u.ip)
    returning u.id, u.seen into id, seen;
end $$;

revoke execute on function arkhe_note_unknown_subject(text, text, inet) from public;

do $$
begin
    execute format('alter function arkhe_note_unknown_subject(text, text, inet) set search_path = %I, pg_temp',
                   current_schema());
end $$;

alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0025;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    w text := arkhe_role('writer');
begin
    perform arkhe_grant_roles_before_0025();
    execute format('grant execute on function arkhe_note_unknown_subject(text, text, inet) to %I', w);
end $$;

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
