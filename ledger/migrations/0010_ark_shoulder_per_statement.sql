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
declare bad record;
begin
    select n.ark, n.shoulder_id, n.naan into bad
      from new_arks n
     where not exists (select 1 from shoulder s where s.id = n.shoulder_id and s.naan = n.naan)
     limit 1;
    if found then
        raise exception using errcode = '23503',
            message = format('ARK %s refused: shoulder id %s of NAAN %s is not registered; every ARK belongs to a registered shoulder of its own NAAN',
                             bad.ark, bad.shoulder_id, bad.naan);
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
