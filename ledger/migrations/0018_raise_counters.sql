-- arkhe ledger, version 18: after a restore, raise the ledger's counters to a floor kept outside it.
--
-- A ledger restored from an earlier backup has forgotten the ARKs minted since, and with them
-- how far its counters had got: the insertion number every ARK row takes (ark.seq, whose
-- largest value is the audit's high-water mark) and each shoulder's draws (shoulder_tally). The
-- mint maps put the forgotten ARKs back (arkhe import --input-format mint-map); the audit's
-- baseline file, kept outside the ledger, recorded the counters. arkhe_raise_ark_seq raises the
-- counters to at least that file's numbers, so no ARK put back or minted after takes an
-- insertion number at or below the recorded mark, and the shoulders' draws never go back.
--
-- It only raises: a number already at or above the floor is left as it is, so calling it again,
-- or with an older floor, changes nothing. It runs as the owner (setval needs the sequence's
-- owner) and only the owner and the operator may call it: raising a counter is the operator's
-- decision after a restore, not a writer's.

-- arkhe_raise_ark_seq raises ark.seq's sequence to at least p_high_water (its next value is
-- then above it) and the draws of each shoulder p_shoulders[i] (labelled NAAN || shoulder, as
-- '99999/x9') to at least p_draws[i], and returns one row per counter it raised: what
-- ('ark.seq' or 'shoulder 99999/x9'), the value it had (was) and the one it has now
-- (raised_to). A label that names no registered shoulder is returned with was and raised_to
-- null and changes nothing. On Citus the sequence raised is the coordinator's, from which every
-- ARK written through the coordinator takes its number. A negative number, or arrays of
-- different lengths, is refused (22023).
create function arkhe_raise_ark_seq(p_high_water bigint, p_shoulders text[], p_draws bigint[])
returns table (what text, was bigint, raised_to bigint)
language plpgsql security definer as $$
declare
    seqname text := pg_get_serial_sequence('ark', 'seq');
    cur bigint; sid bigint;
begin
    if p_high_water < 0 or coalesce(array_length(p_shoulders, 1), 0) <> coalesce(array_length(p_draws, 1), 0)
       or exists (select 1 from unnest(p_draws) d where d < 0 or d is null) then
        raise exception using errcode = '22023',
            message = 'arkhe_raise_ark_seq: the high-water mark and the draws must not be negative, and every shoulder needs its draws';
    end if;
    cur := coalesce(pg_sequence_last_value(seqname::regclass), 0);
    if p_high_water is not null and cur < p_high_water then
        perform setval(seqname, p_high_water, true);
        what := 'ark.seq'; was := cur; raised_to := p_high_water;
        return next;
    end if;
    for i in 1 .. coalesce(array_length(p_shoulders, 1), 0) loop
        select s.id into sid from shoulder s where s.naan || s.shoulder = p_shoulders[i];
        if sid is null then
            what := 'shoulder ' || p_shoulders[i]; was := null; raised_to := null;
            return next;
            continue;
        end if;
        select t.draws into cur from shoulder_tally t where t.shoulder_id = sid;
        if cur is null or cur < p_draws[i] then
            insert into shoulder_tally as t (shoulder_id, draws) values (sid, p_draws[i])
            on conflict (shoulder_id) do update set draws = greatest(t.draws, excluded.draws);
            what := 'shoulder ' || p_shoulders[i]; was := coalesce(cur, 0); raised_to := p_draws[i];
            return next;
        end if;
    end loop;
end $$;

-- The roles' privileges, on top of those granted before: the operator raises the counters.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0018;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator');
begin
    perform arkhe_grant_roles_before_0018();
    execute format('grant execute on function arkhe_raise_ark_seq(bigint, text[], bigint[]) to %I', p);
end $$;

revoke execute on function arkhe_grant_roles(), arkhe_raise_ark_seq(bigint, text[], bigint[]) from public;

do $$
declare f text;
begin
    foreach f in array array['arkhe_grant_roles()', 'arkhe_raise_ark_seq(bigint, text[], bigint[])'] loop
        execute format('alter function %s set search_path = %I, pg_temp', f, current_schema());
    end loop;
end $$;
