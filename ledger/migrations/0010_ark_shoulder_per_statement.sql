-- Every ARK belongs to a registered shoulder of its own NAAN: on the single layout this is now
-- checked once per statement over the statement's new rows, instead of by the foreign key's
-- per-row lookup (and row lock) of the shoulder, which cost more of the server's time per
-- minted ARK than any other mechanism of the ledger. The promise is unchanged: an INSERT or
-- COPY holding one ARK whose (shoulder_id, naan) is not a registered shoulder is refused whole
-- with foreign_key_violation (23503), as the foreign key refused it. What the foreign key also
-- held on the shoulder's side holds by other rules: a shoulder is never deleted (its delete and
-- truncate triggers), its NAAN never changes (shoulder_update), and its id never changes
-- (shoulder_id_fixed, below). On the citus layout the foreign key stays: its statement
-- triggers cannot read a transition table on the workers.

create function arkhe_ark_in_shoulder() returns trigger language plpgsql as $$
declare bad_shoulder bigint; bad_naan text; bad_ark text;
begin
    -- the statement's few (shoulder, NAAN) pairs first, then each looked up once
    select g.shoulder_id, g.naan into bad_shoulder, bad_naan
      from (select distinct n.shoulder_id, n.naan from new_arks n) g
     where not exists (select 1 from shoulder s where s.id = g.shoulder_id and s.naan = g.naan)
     limit 1;
    if found then
        select n.ark into bad_ark from new_arks n where n.shoulder_id = bad_shoulder and n.naan = bad_naan limit 1;
        raise exception using errcode = '23503',
            message = format('ARK %s refused: shoulder id %s of NAAN %s is not registered; every ARK belongs to a registered shoulder of its own NAAN',
                             bad_ark, bad_shoulder, bad_naan);
    end if;
    return null;
end $$;

create function arkhe_shoulder_id_fixed() returns trigger language plpgsql as $$
begin
    raise exception using errcode = 'AK002',
        message = format('shoulder %s of NAAN %s: its id never changes (its ARKs refer to it)', old.shoulder, old.naan);
end $$;

do $$
begin
    if arkhe_layout() = 'single' then
        alter table ark drop constraint ark_shoulder_id_naan_fkey;
        -- named to fire before ark_reach (after-statement triggers fire in name order), so an
        -- unregistered shoulder is reported as such, as the foreign key reported it
        create trigger ark_in_shoulder after insert on ark referencing new table as new_arks
            for each statement execute function arkhe_ark_in_shoulder();
        create trigger shoulder_id_fixed before update of id on shoulder
            for each row when (new.id is distinct from old.id) execute function arkhe_shoulder_id_fixed();
    end if;
end $$;
