-- arkhe ledger: adopting a migrated shoulder (`arkhe shoulder adopt`).
--
-- An institution leaving EZID or arklet keeps minting in the shoulder its ARKs already live in:
-- the reserved shoulder an import created gets a manager and becomes active. Names are never
-- reissued, so before it mints every name the old system issued under it must be in the ledger.
--
-- shoulder.blade_template  the classes of the blades the shoulder mints, one per position:
--               'e' any betanumeric, 'd' a digit (a NOID minter's mask without its check
--               character: 'eed' for the mask eedk). Null: blade_length betanumerics, what arkhe
--               mints by default. Its length is the blade length.
-- shoulder.adopted_at  when the shoulder was adopted; null for one registered to mint from the
--               start. An ARK that came in before has the check-character verdict its import
--               recorded, under the zone the shoulder had then (none: no verdict), whatever zone
--               the adoption gave the shoulder; the audit does not judge it again.
-- import_skipped  the names an import left out of the ledger, per import run, and why:
--               'reserved' (an EZID reserved name, imported only with --include-reserved),
--               'test' (the test NAAN 99999, only with --include-test), 'conflict' (rows of one
--               file that named it with different values: neither imported). A shoulder whose
--               names are among them, and not in the ledger, is not adopted. Append-only.
--
-- On Citus import_skipped is distributed by the ARK and co-located with ark, so the question
-- "which skipped names are not in the ledger" is answered shard by shard.

alter table shoulder add column blade_template varchar(64) collate "C";
alter table shoulder add column adopted_at timestamptz;
alter table shoulder add constraint shoulder_blade_template
    check (blade_template is null or (blade_template ~ '^[de]+$' and length(blade_template) = blade_length));

create table import_skipped (
    ark           varchar(272) collate "C" not null,
    naan          varchar(16) collate "C" not null,
    assigned_name varchar(255) collate "C" not null,
    reason        text not null check (reason in ('reserved', 'test', 'conflict')),
    import_run_id bigint not null,
    primary key (ark, import_run_id),
    constraint import_skipped_key_form check (ark = naan || '/' || assigned_name)
);

do $$
begin
    if arkhe_layout() = 'citus' then
        perform set_config('citus.enable_unsafe_triggers', 'on', true);
        perform create_distributed_table('import_skipped', 'ark', colocate_with => 'ark');
    end if;
end $$;

-- the skipped names under a shoulder: a prefix of assigned_name within one NAAN
create index import_skipped_name on import_skipped (naan, assigned_name);

-- ---------------------------------------------------------------- nothing is deleted

do $$
declare t text;
begin
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    foreach t in array array['import_skipped'] loop
        execute format('create trigger %I before delete on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_delete', t);
        execute format('create trigger %I before truncate on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_truncate', t);
        execute format('create trigger %I before update on %I for each statement execute function arkhe_refuse_update()',
                       t || '_append_only', t);
    end loop;
end $$;

-- ---------------------------------------------------------------- privileges

-- The roles' privileges on what this migration adds, on top of those granted before (kept
-- under a name of their own and called first, so whatever an earlier migration granted still
-- is): every role reads the skipped names, the writer (import) appends them.
alter function arkhe_grant_roles() rename to arkhe_grant_roles_before_0006;

create function arkhe_grant_roles() returns void language plpgsql as $$
declare
    p text := arkhe_role('operator'); w text := arkhe_role('writer'); a text := arkhe_role('auditor');
begin
    perform arkhe_grant_roles_before_0006();
    execute format('grant select on import_skipped to %I, %I, %I', p, w, a);
    execute format('grant insert on import_skipped to %I', w);
end $$;

revoke execute on function arkhe_grant_roles() from public;

do $$
begin
    execute format('alter function arkhe_grant_roles() set search_path = %I, pg_temp', current_schema());
end $$;
