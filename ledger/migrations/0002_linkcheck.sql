-- arkhe ledger: the targets' health (`arkhe linkcheck`).
--
-- link_state    one row per ARK whose target was checked (or repointed): the latest check and the
--               state derived from the checks (consecutive failures, first failure, last success,
--               broken, the host, media type and size of the last good answer) and when the
--               target is next due.
-- link_event    one row per change of that state: broken, recovered, content_changed, repointed.
--               Never one per check, so the history stays small at millions of ARKs. Append-only.
-- link_exclusion  targets left out of every run, by manager, shoulder or host; lifting an
--               exclusion sets its ended_at, the row stays.
--
-- The per-ARK tables carry no foreign key to ark: a foreign-key check locks the ARK row it finds,
-- which would write to the ark table at every first check of a target. Their writers (the link
-- checker's sink, the import of a legacy checker's state, the repoint trigger below) insert by
-- selecting the ARK from ark, so a row only ever names an ARK that exists (ARKs are never
-- deleted). Nothing here touches ark inserts: minting costs what it did.
--
-- Written against the columns every layout keeps: ark.ark (varchar(272) collate "C"), ark.url,
-- ark.status, ark.naan, ark.shoulder_id, shoulder (id, naan, shoulder, manager_id),
-- manager (id, name), and ark_change's ark, at, before_url and after_url.

create table link_state (
    ark                  varchar(272) collate "C" primary key,
    -- the target this state is about: the ARK's target when it was checked or repointed
    target               varchar(2048),
    -- the latest check; all null when never checked (or reset by a repoint)
    checked_at           timestamptz,
    final_url            text,
    -- HTTP status of the last answer; null when there was none
    status_code          smallint check (status_code between 100 and 999),
    -- why there was no usable answer; null when the status is the verdict
    error_class          text check (error_class in ('bad_url', 'bad_scheme', 'blocked', 'dns', 'refused',
                             'unreachable', 'reset', 'timeout', 'tls', 'redirect_loop',
                             'too_many_redirects', 'bad_redirect', 'other')),
    outcome              text check (outcome in ('good', 'failed', 'inconclusive')),
    mime_type            text,
    -- body size in bytes; null when unknown
    size                 bigint check (size >= 0),
    duration_ms          integer check (duration_ms >= 0),
    redirects            smallint check (redirects >= 0),
    -- digest of the body bytes a GET read, with its algorithm
    body_hash            bytea,
    hash_alg             text check (hash_alg in ('sha256', 'md5')),
    -- the state
    consecutive_failures integer not null default 0 check (consecutive_failures >= 0),
    first_failure_at     timestamptz,
    last_success_at      timestamptz,
    broken               boolean not null default false,
    -- the last good answer, what "content changed" compares with
    good_host            text,
    good_media_type      text,
    good_size            bigint check (good_size >= 0),
    -- when the target is next due for a check; null: due now (never checked)
    due_at               timestamptz,
    -- failing targets (broken, failed since the last good check, or an inconclusive last check)
    -- are checked first and again after the bad window
    failing              boolean generated always as (broken or consecutive_failures > 0
                             or (checked_at is not null and outcome is distinct from 'good')) stored,
    -- the number of link_event rows of this ARK: the next event's seq is event_seq + 1
    event_seq            integer not null default 0 check (event_seq >= 0),
    -- the import run that loaded this state from a legacy checker; null for arkhe's own checks
    import_run_id        bigint,
    constraint link_state_hash check ((body_hash is null) = (hash_alg is null)
        and (hash_alg is distinct from 'md5' or length(body_hash) = 16)
        and (hash_alg is distinct from 'sha256' or length(body_hash) = 32)),
    constraint link_state_checked check ((checked_at is null) = (outcome is null))
);

create table link_event (
    ark           varchar(272) collate "C" not null,
    -- 1, 2, ... per ARK: the ARK's history in order, without a ledger-wide counter
    seq           integer not null check (seq > 0),
    at            timestamptz not null,
    kind          text not null check (kind in ('broken', 'recovered', 'content_changed', 'repointed')),
    -- the target the event is about (the new one for repointed)
    target        varchar(2048),
    reason        text,
    import_run_id bigint,
    primary key (ark, seq)
);

create table link_exclusion (
    id          bigint generated always as identity primary key,
    -- exactly one of manager, shoulder and host
    manager_id  bigint,
    shoulder_id bigint,
    -- a host name in lower case, without port
    host        varchar(253) collate "C" check (host = lower(host) and host <> ''),
    reason      text,
    created_at  timestamptz not null default now(),
    created_by  text,
    ended_at    timestamptz,
    ended_by    text,
    constraint link_exclusion_one check (num_nonnulls(manager_id, shoulder_id, host) = 1),
    constraint link_exclusion_ended check (ended_at is null or ended_at >= created_at)
);

-- On a Citus coordinator the per-ARK tables are distributed by the ARK and co-located with ark,
-- so a check's writes and the repoint trigger stay on one shard; the exclusions, a few rows read
-- by every run, are a reference table. The layout is the session's arkhe.layout or, when the
-- ledger records one, arkhe_layout().
do $$
declare layout text := nullif(current_setting('arkhe.layout', true), '');
begin
    if to_regproc('arkhe_layout') is not null then
        execute 'select arkhe_layout()' into layout;
    end if;
    if layout = 'citus' then
        perform set_config('citus.enable_unsafe_triggers', 'on', true);
        -- one connection per node, so the foreign keys below may follow in this transaction
        perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
        perform create_distributed_table('link_state', 'ark', colocate_with => 'ark');
        perform create_distributed_table('link_event', 'ark', colocate_with => 'ark');
        perform create_reference_table('link_exclusion');
    end if;
end $$;

alter table link_exclusion add foreign key (manager_id) references manager;
alter table link_exclusion add foreign key (shoulder_id) references shoulder;

-- at most one open exclusion of a manager, a shoulder or a host
create unique index link_exclusion_open on link_exclusion
    (coalesce(manager_id, 0), coalesce(shoulder_id, 0), coalesce(host, '')) where ended_at is null;

-- What a run selects, in its order: failing targets that are due, by due time; then targets never
-- checked; then good targets that are due, by due time. The due ones are a range scan of one
-- partial index each, so a nightly run reads the rows that are due and not the whole table. The
-- never-checked ones are the ARK keys without a checked state: found by walking ark's primary key
-- against link_state_checked, index to index, without reading an ARK row that has a state.
create index link_state_due_failing on link_state (due_at, ark) where failing;
create index link_state_due_good on link_state (due_at, ark) where not failing;
create index link_state_checked on link_state (ark) where checked_at is not null;
create index link_state_broken on link_state (ark) where broken;

-- ---------------------------------------------------------------- nothing is deleted

create function arkhe_link_exclusion_update() returns trigger language plpgsql as $$
begin
    if old.ended_at is not null or new.ended_at is null
       or (new.manager_id, new.shoulder_id, new.host, new.reason, new.created_at, new.created_by)
          is distinct from (old.manager_id, old.shoulder_id, old.host, old.reason, old.created_at, old.created_by) then
        raise exception using errcode = 'AK002',
            message = 'UPDATE of link_exclusion refused: an exclusion only ever gets its end (ended_at, ended_by), once';
    end if;
    return new;
end $$;

do $$
declare t text;
begin
    foreach t in array array['link_state', 'link_event', 'link_exclusion'] loop
        execute format('create trigger %I before delete on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_delete', t);
        execute format('create trigger %I before truncate on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_truncate', t);
    end loop;
end $$;
create trigger link_event_append_only before update on link_event
    for each statement execute function arkhe_refuse_update();
create trigger link_exclusion_update before update on link_exclusion
    for each row execute function arkhe_link_exclusion_update();

-- ---------------------------------------------------------------- a repoint resets the state

-- A change of an ARK's target (any ARK_CHANGE row whose after_url differs from its before_url:
-- the repoint path, an accepted export) starts the link state of an ARK that has one afresh for
-- the new target, never checked and due at once, and appends a 'repointed' event. An ARK without
-- a state gets none (a repoint costs no link-check row where nobody checks links); the link
-- checker's sink stores a check only while the ARK still points to the target checked. It writes
-- only rows of the same ARK, which on Citus live on the same shard as the change.
create function arkhe_link_repoint() returns trigger language plpgsql as $$
declare n integer;
begin
    update link_state set
        target = new.after_url, checked_at = null, final_url = null, status_code = null,
        error_class = null, outcome = null, mime_type = null, size = null, duration_ms = null,
        redirects = null, body_hash = null, hash_alg = null, consecutive_failures = 0,
        first_failure_at = null, last_success_at = null, broken = false, good_host = null,
        good_media_type = null, good_size = null, due_at = null, import_run_id = null,
        event_seq = event_seq + 1
    where ark = new.ark
    returning event_seq into n;
    if found then
        insert into link_event (ark, seq, at, kind, target, reason)
        values (new.ark, n, coalesce(new.at, now()), 'repointed', new.after_url,
                format('target %s -> %s', coalesce(new.before_url, '(none)'), coalesce(new.after_url, '(none)')));
    end if;
    return null;
end $$;
create trigger ark_change_link_repoint after insert on ark_change
    for each row when (new.after_url is distinct from new.before_url)
    execute function arkhe_link_repoint();
