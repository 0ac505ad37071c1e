-- arkhe ledger, baseline (version 1).
--
-- The ledger's promises live here, as constraints and triggers, so that they hold for every
-- writer, not only for arkhe:
--   * an ARK is never deleted, nor a shoulder, a receipt or any history row;
--   * retired is one-way for a shoulder;
--   * minting never becomes an update: every UPDATE of an ARK goes through the repoint path,
--     which appends the ARK_CHANGE row describing it, and identity columns never change;
--   * reach comes from the client's registration only.
-- Refusals raise SQLSTATEs of class AK, so callers classify them by code, never by text:
--   AK001 deletion refused           AK002 update refused (identity, append-only, repoint path)
--   AK003 retired is one-way         AK004 reach refused
--   AK005 credential kind does not fit the subject type
-- Identifier columns are COLLATE "C" (octet order). Widths follow draft-kunze-ark: a NAAN of at
-- most 16 octets (§2.3), an assigned name (shoulder, blade, check character, qualifiers) of at most
-- 255 (§3.1), so the ledger key NAAN/name is at most 272.
--
-- Two physical layouts, one description. The migration session sets arkhe.layout:
--   'single'  one PostgreSQL server: a receipt is two columns of its ARK row, unique through a
--             partial index (the smallest form: no second row, no second copy of the ARK string);
--   'citus'   a Citus coordinator: registration tables are reference tables (a copy on every node);
--             ark and ark_change are distributed by the ARK string and co-located, receipts are a
--             table of their own distributed by request ID (a unique key must contain the
--             distribution column, and the ARK string is not in a receipt's key).
-- Every table is created first without foreign keys or triggers, distributed when the layout is
-- 'citus', and only then given its foreign keys and triggers: Citus turns a table created with a
-- foreign key to a reference table into a local table that can no longer be distributed, and
-- distributing a table fires its truncate triggers.

-- Settings fixed when the ledger is created: ('layout', 'single' or 'citus'). The row is written
-- after the tables are distributed (a table distributed empty leaves no local copy behind).
create table ledger_setting (
    name  text collate "C" primary key,
    value text not null,
    constraint ledger_setting_layout check (name <> 'layout' or value in ('single', 'citus'))
);

-- The layout this ledger was created with: 'single' or 'citus'.
create function arkhe_layout() returns text language sql stable as $$
    select value from ledger_setting where name = 'layout'
$$;

create table naan (
    naan             varchar(16) collate "C" primary key
                     check (naan ~ '^[0-9bcdfghjkmnpqrstvwxz]+$'),
    name             text,
    is_authoritative boolean not null default true,
    redirect         text,
    na_policy        text,
    minter           text,
    who              text,
    erc_where        text,
    note             text,
    registered_at    timestamptz,
    created_at       timestamptz not null default now(),
    import_run_id    bigint
);

create table manager (
    id                  bigint generated always as identity primary key,
    naan                varchar(16) collate "C" not null,
    name                text not null,
    default_shoulder_id bigint,
    -- NLM permanence ratings, strongest first
    commitment_level    text check (commitment_level in (
                            'Permanent: Unchanging Content', 'Permanent: Stable Content',
                            'Permanent: Dynamic Content', 'Not Guaranteed')),
    -- new mints per UTC day (replays excluded); null: no limit
    quota_per_day       integer check (quota_per_day > 0),
    active              boolean not null default true,
    succeeded_by_id     bigint,
    created_at          timestamptz not null default now(),
    unique (naan, name),
    unique (id, naan)
);

create table shoulder (
    id            bigint generated always as identity primary key,
    naan          varchar(16) collate "C" not null,
    shoulder      varchar(255) collate "C" not null check (shoulder ~ '^/'),
    manager_id    bigint,
    redirect      text,
    minter        text,
    status        text not null default 'active'
                  check (status in ('active', 'reserved', 'delegated', 'retired')),
    check_zone    text not null default 'naan_name'
                  check (check_zone in ('naan_name', 'name_only', 'none')),
    blade_length  smallint not null default 8 check (blade_length between 1 and 64),
    note          text,
    created_at    timestamptz not null default now(),
    retired_at    timestamptz,
    import_run_id bigint,
    unique (naan, shoulder),
    unique (id, naan),
    unique (id, manager_id),
    -- only a shoulder of the first-digit convention (letters, then one digit) may mint
    constraint shoulder_active_first_digit
        check (status <> 'active' or shoulder ~ '^/[bcdfghjkmnpqrstvwxz]+[0-9]$'),
    constraint shoulder_retired_at
        check ((status = 'retired') = (retired_at is not null))
);

create table client (
    id             bigint generated always as identity primary key,
    client_id      varchar(255) collate "C" not null unique,
    naan           varchar(16) collate "C" not null,
    manager_id     bigint,
    subject_type   text not null check (subject_type in ('machine', 'person')),
    authority      text not null check (authority in ('system', 'naan', 'manager')),
    shoulder_id    bigint,
    allowed_scopes text[] collate "C" not null default '{}'
                   check (allowed_scopes <@ array['ark:mint', 'ark:update', 'ark:tombstone',
                                                  'ark:import', 'ark:read']::text[]),
    active         boolean not null default true,
    expires_at     timestamptz,
    created_at     timestamptz not null default now(),
    constraint client_naan_expires check (authority <> 'naan' or expires_at is not null),
    constraint client_manager_authority check (authority <> 'manager' or manager_id is not null)
);

create table credential (
    id              bigint generated always as identity primary key,
    client_pk       bigint not null,
    kind            text not null check (kind in ('api_key', 'client_secret', 'password')),
    prefix          varchar(32) collate "C" not null,
    hashed          text not null,
    active          boolean not null default true,
    failed_attempts integer not null default 0,
    locked_until    timestamptz,
    created_at      timestamptz not null default now(),
    revoked_at      timestamptz,
    unique (prefix)
);

create table import_run (
    id          bigint generated always as identity primary key,
    command     text not null default 'import' check (command in ('import', 'reconcile')),
    client_pk   bigint,
    started_at  timestamptz not null default now(),
    finished_at timestamptz,
    source_file text not null,
    format      text not null,
    digest      text,
    dry_run     boolean not null default false,
    counts      jsonb
);

create table ark (
    -- insertion number: unique, ordered per node only; internal, never shown to a user
    seq              bigint generated always as identity,
    ark              varchar(272) collate "C" primary key,
    naan             varchar(16) collate "C" not null,
    shoulder_id      bigint not null,
    assigned_name    varchar(255) collate "C" not null,
    url              varchar(2048),
    commitment       text,
    erc_who          text,
    erc_what         text,
    erc_when         text,
    metadata         jsonb,
    status           text not null default 'public'
                     check (status in ('public', 'reserved', 'unavailable')),
    tombstone_reason text,
    tombstoned_at    timestamptz,
    original         text collate "C",
    check_ok         boolean,
    created_at       timestamptz,
    updated_at       timestamptz,
    created_by       bigint,
    updated_by       bigint,
    import_run_id    bigint,
    -- how many ARK_CHANGE rows describe this ARK: the repoint path raises it by one with each
    change_seq       integer not null default 0 check (change_seq >= 0),
    -- the mint receipt in the single layout (null on an imported ARK, and always in the citus
    -- layout, which keeps receipts in their own table)
    request_id       varchar(255) collate "C",
    payload_digest   bytea,
    constraint ark_key_form check (ark = naan || '/' || assigned_name),
    constraint ark_receipt_whole check ((request_id is null) = (payload_digest is null)),
    constraint ark_receipt_digest check (payload_digest is null or length(payload_digest) = 16),
    constraint ark_receipt_client check (request_id is null or created_by is not null)
);

-- Where an ARK used to point: one row per change through the repoint path, numbered per ARK
-- from 1 (seq), so the history of one ARK is ordered without a ledger-wide counter.
create table ark_change (
    ark           varchar(272) collate "C" not null,
    seq           integer not null check (seq > 0),
    at            timestamptz,
    action        text not null check (action in ('update', 'tombstone', 'metadata', 'restore')),
    before_url    varchar(2048),
    after_url     varchar(2048),
    before_status text,
    after_status  text,
    reason        text,
    before_erc    jsonb,
    after_erc     jsonb,
    by_client     bigint,
    by_text       text,
    ip            inet,
    import_run_id bigint,
    -- the writing transaction, node-local: tells an audit whether it could see the row
    xact          xid8 not null default pg_current_xact_id(),
    primary key (ark, seq)
);
create index ark_change_at on ark_change (at);

-- A mint receipt in the citus layout: (client, request ID) -> ARK with the 16-byte digest of the
-- mapped payload, written in the same distributed transaction as the ARK.
create table receipt (
    client_pk      bigint not null,
    request_id     varchar(255) collate "C" not null,
    ark            varchar(272) collate "C" not null,
    payload_digest bytea not null check (length(payload_digest) = 16),
    created_at     timestamptz not null,
    primary key (client_pk, request_id)
);

-- Draws (blades tried) and collisions (draws that named an existing ARK) per shoulder, kept apart
-- from the shoulder row so that a mint batch never writes a registration table. A mint batch adds
-- its counts in the transaction that writes its ARKs (a rolled-back batch counts nothing); a
-- shoulder that never minted has no row (read as zero).
create table shoulder_tally (
    shoulder_id bigint primary key,
    draws       bigint not null default 0 check (draws >= 0),
    collisions  bigint not null default 0 check (collisions >= 0)
);

-- New mints per manager per UTC day (replays excluded), for manager.quota_per_day. A mint batch
-- adds its new mints in the transaction that writes its ARKs and is rolled back when the sum
-- passes the quota, so the count is exact under concurrent runs and after a crash. Kept for every
-- manager, with or without a quota, so a quota set during a day counts that day's earlier mints.
-- Days accumulate; nothing is deleted.
create table mint_quota (
    manager_id bigint not null,
    day        date not null,
    minted     bigint not null default 0 check (minted >= 0),
    primary key (manager_id, day)
);

create table audit_event (
    id        bigint generated always as identity primary key,
    at        timestamptz not null default now(),
    client_id varchar(255) collate "C",
    authority text,
    action    text not null,
    target    text,
    detail    jsonb
);

-- One row per clean audit: what the ledger held in the audit's snapshot, so the next audit can
-- tell that a row was removed or altered behind the triggers' back. Internal values only.
create table audit_summary (
    id          bigint generated always as identity primary key,
    -- now() of the audit's transaction
    at          timestamptz not null,
    -- the audit's snapshot: which rows and ARK_CHANGE rows it could see
    snapshot    pg_snapshot not null,
    -- pg_control_system().system_identifier || '/' || database oid (or '/' || oid when the role
    -- may not read pg_control_system()): a snapshot means something on its origin only
    origin      text not null,
    -- max(ark.seq) visible to the audit; 0 for an empty ledger
    high_water  bigint not null check (high_water >= 0),
    ark_count   bigint not null check (ark_count >= 0),
    -- order-independent digest of those ARKs: the sum mod 2^64 of a 64-bit hash of (seq, key),
    -- stored as a signed bigint
    digest      bigint not null,
    -- ARKs per shoulder: {"NAAN /shoulder": count}
    shoulders   jsonb not null,
    -- count and digest per block of 65,536 seq values: [[block, count, digest], ...]
    blocks      jsonb not null,
    full_audit  boolean not null
);

create table unknown_subject (
    id         bigint generated always as identity primary key,
    subject    text not null,
    issuer     text,
    first_seen timestamptz not null default now(),
    last_seen  timestamptz not null default now(),
    seen       bigint not null default 1,
    ip         inet,
    unique (subject, issuer)
);

-- ---------------------------------------------------------------- the citus layout

do $$
begin
    if current_setting('arkhe.layout', true) = 'citus' then
        perform set_config('citus.enable_unsafe_triggers', 'on', true);
        perform create_reference_table(t)
        from unnest(array['ledger_setting', 'naan', 'manager', 'shoulder', 'client', 'credential',
                          'import_run', 'audit_event', 'audit_summary', 'unknown_subject']) as t;
        perform create_distributed_table('ark', 'ark');
        perform create_distributed_table('ark_change', 'ark', colocate_with => 'ark');
        perform create_distributed_table('receipt', 'request_id', colocate_with => 'none');
        perform create_distributed_table('shoulder_tally', 'shoulder_id', colocate_with => 'none');
        perform create_distributed_table('mint_quota', 'manager_id', colocate_with => 'none');
    end if;
end $$;

-- an unset or empty arkhe.layout is the single layout; any other value fails the check
insert into ledger_setting (name, value)
values ('layout', coalesce(nullif(current_setting('arkhe.layout', true), ''), 'single'));

-- ---------------------------------------------------------------- foreign keys

alter table manager add foreign key (naan) references naan;
alter table manager add foreign key (succeeded_by_id) references manager;
alter table shoulder add foreign key (naan) references naan;
-- a shoulder's NAAN matches its manager's
alter table shoulder add foreign key (manager_id, naan) references manager (id, naan);
-- the default shoulder must be one the manager holds (a cycle: checked at commit)
alter table manager add constraint manager_default_shoulder_fk
    foreign key (default_shoulder_id, id) references shoulder (id, manager_id)
    deferrable initially deferred;
alter table client add foreign key (naan) references naan;
alter table client add foreign key (manager_id, naan) references manager (id, naan);
alter table client add foreign key (shoulder_id, naan) references shoulder (id, naan);
alter table credential add foreign key (client_pk) references client;
alter table import_run add foreign key (client_pk) references client;
-- one check covers the shoulder and that the shoulder belongs to the ARK's NAAN
alter table ark add foreign key (shoulder_id, naan) references shoulder (id, naan);
alter table ark_change add foreign key (ark) references ark (ark);
alter table receipt add foreign key (client_pk) references client;
alter table shoulder_tally add foreign key (shoulder_id) references shoulder;
alter table mint_quota add foreign key (manager_id) references manager;

-- ---------------------------------------------------------------- indexes and the receipt view

create index ark_seq_brin on ark using brin (seq);

do $$
begin
    if arkhe_layout() = 'single' then
        -- one receipt per (client, request ID); imported ARKs carry none and stay out of the index
        create unique index ark_receipt on ark (created_by, request_id) where request_id is not null;
        create view mint_receipt as
            select created_by as client_pk, request_id, ark, payload_digest, created_at
            from ark where request_id is not null;
    else
        -- receipts live in the receipt table, whose key makes them unique across the cluster; a
        -- receipt on an ark row would escape that key (no unique index over the ARK's
        -- distribution can cover it), so the ark row carries none
        alter table ark add constraint ark_receipt_elsewhere check (request_id is null and payload_digest is null);
        create view mint_receipt as
            select client_pk, request_id, ark, payload_digest, created_at from receipt;
    end if;
end $$;

-- ---------------------------------------------------------------- nothing is deleted

create function arkhe_refuse_delete() returns trigger language plpgsql as $$
declare
    -- on Citus a row-level DELETE fires on the shard (ark_102008): name the table
    t text := regexp_replace(tg_table_name, '_[0-9]+$', '');
begin
    raise exception using errcode = 'AK001',
        message = format('%s on %s refused: rows of an ARK ledger are never deleted', tg_op, t),
        hint = case t
                   when 'ark' then 'tombstone the ARK instead: select ark_tombstone(...)'
                   when 'shoulder' then 'retire the shoulder instead: status = ''retired'''
                   when 'credential' then 'revoke it instead: active = false'
                   when 'client' then 'deactivate it instead: active = false'
                   else 'nothing in an ARK ledger is deleted' end;
end $$;

create function arkhe_refuse_update() returns trigger language plpgsql as $$
begin
    raise exception using errcode = 'AK002',
        message = format('UPDATE on %s refused: the table is append-only', regexp_replace(tg_table_name, '_[0-9]+$', ''));
end $$;

-- ---------------------------------------------------------------- shoulders

create function arkhe_shoulder_update() returns trigger language plpgsql as $$
begin
    if new.naan is distinct from old.naan or new.shoulder is distinct from old.shoulder then
        raise exception using errcode = 'AK002',
            message = format('shoulder %s of NAAN %s: NAAN and shoulder string never change', old.shoulder, old.naan);
    end if;
    if old.status = 'retired' and new.status <> 'retired' then
        raise exception using errcode = 'AK003',
            message = format('shoulder %s of NAAN %s is retired; retired is one-way: a name it held may have been used meanwhile', old.shoulder, old.naan);
    end if;
    if old.retired_at is not null and new.retired_at is distinct from old.retired_at then
        raise exception using errcode = 'AK003',
            message = format('shoulder %s of NAAN %s: retired_at never changes', old.shoulder, old.naan);
    end if;
    return new;
end $$;

-- ---------------------------------------------------------------- clients: reach is a registration attribute

create function arkhe_client_reach() returns trigger language plpgsql as $$
declare s_manager bigint;
begin
    if tg_op = 'UPDATE' then
        -- an update may narrow reach, never widen it: widening is a new registration
        if new.client_id is distinct from old.client_id or new.naan is distinct from old.naan
           or new.subject_type is distinct from old.subject_type then
            raise exception using errcode = 'AK002',
                message = format('client %s: client_id, NAAN and subject type never change', old.client_id);
        end if;
        if new.authority is distinct from old.authority
           or new.manager_id is distinct from old.manager_id
           or (old.shoulder_id is not null and new.shoulder_id is distinct from old.shoulder_id)
           or not (new.allowed_scopes <@ old.allowed_scopes) then
            raise exception using errcode = 'AK004',
                message = format('client %s: reach (authority, manager, pinned shoulder, scopes) may be narrowed but never widened; register a new client', old.client_id);
        end if;
    end if;
    if new.shoulder_id is not null and new.authority = 'manager' then
        select manager_id into s_manager from shoulder where id = new.shoulder_id;
        if s_manager is distinct from new.manager_id then
            raise exception using errcode = 'AK004',
                message = format('client %s: a manager client can be pinned only to a shoulder its manager holds', new.client_id);
        end if;
    end if;
    return new;
end $$;

create function arkhe_credential_kind() returns trigger language plpgsql as $$
declare st text;
begin
    select subject_type into st from client where id = new.client_pk;
    if st = 'machine' and new.kind = 'password' then
        raise exception using errcode = 'AK005',
            message = 'a machine client cannot hold a password';
    elsif st = 'person' and new.kind in ('api_key', 'client_secret') then
        raise exception using errcode = 'AK005',
            message = format('a person client cannot hold an %s', new.kind);
    end if;
    if tg_op = 'UPDATE' and (new.client_pk <> old.client_pk or new.kind <> old.kind or new.hashed <> old.hashed
                             or new.prefix <> old.prefix or (not old.active and new.active)) then
        raise exception using errcode = 'AK002',
            message = 'a credential never changes owner, kind or secret, and a revoked one stays revoked';
    end if;
    return new;
end $$;

-- ---------------------------------------------------------------- ARKs: insert-only, reach, repoint path

-- Minted rows (import_run_id is null) must be within the minting client's registered reach, on an
-- active shoulder. Checked once per statement: the transition table is grouped by (shoulder,
-- client) — one group for a whole mint batch — and each group is looked up in the registration
-- tables. The transition table is never joined with another table, so the same function works on
-- a Citus worker, where it fires per shard.
create function arkhe_ark_reach() returns trigger language plpgsql as $$
declare g record; c record; s record;
begin
    for g in select n.shoulder_id, n.created_by, n.naan, min(n.ark) as ark
             from new_arks n where n.import_run_id is null
             group by n.shoulder_id, n.created_by, n.naan loop
        select id, status, shoulder, naan, manager_id into s from shoulder where id = g.shoulder_id;
        select id, client_id, active, expires_at, allowed_scopes, shoulder_id, authority, naan, manager_id
          into c from client where id = g.created_by;
        if c.id is null or not c.active
           or (c.expires_at is not null and c.expires_at <= now())
           or not ('ark:mint' = any (c.allowed_scopes))
           or s.status is distinct from 'active'
           or (c.shoulder_id is not null and c.shoulder_id <> s.id)
           -- a shoulder without a manager is outside every manager's reach (no NULL slips through)
           or not coalesce(   c.authority = 'system'
                           or (c.authority = 'naan' and c.naan = s.naan)
                           or (c.authority = 'manager' and c.manager_id = s.manager_id), false) then
            raise exception using errcode = 'AK004',
                message = format('mint of %s refused: client %s may not mint in shoulder %s (status %s) of NAAN %s; reach comes from the client''s registration only',
                                 g.ark, coalesce(c.client_id, '(none)'), s.shoulder, s.status, g.naan);
        end if;
    end loop;
    return null;
end $$;

-- Every UPDATE of ark is refused unless it comes through the repoint path: identity columns (the
-- receipt included) never change, change_seq rises by exactly one, and the ARK_CHANGE row with
-- that number exists and describes the new target and status. The ARK_CHANGE row is co-located
-- with its ARK, so on Citus the lookup stays on the shard's node. INSERT ... ON CONFLICT (ark) DO
-- UPDATE therefore fails too: minting never becomes an update.
create function arkhe_ark_update() returns trigger language plpgsql as $$
begin
    if new.ark is distinct from old.ark or new.naan is distinct from old.naan
       or new.assigned_name is distinct from old.assigned_name or new.shoulder_id is distinct from old.shoulder_id
       or new.seq is distinct from old.seq or new.created_at is distinct from old.created_at
       or new.created_by is distinct from old.created_by or new.original is distinct from old.original
       or new.import_run_id is distinct from old.import_run_id
       or new.request_id is distinct from old.request_id or new.payload_digest is distinct from old.payload_digest then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of ARK %s refused: identity columns (receipt included) never change', old.ark);
    end if;
    if new.change_seq is distinct from old.change_seq + 1
       or not exists (select 1 from ark_change c
                      where c.ark = new.ark and c.seq = new.change_seq
                        and c.after_url is not distinct from new.url
                        and c.after_status is not distinct from new.status) then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of ARK %s refused: minting never becomes an update; a change goes through the repoint path, which appends the ARK_CHANGE row describing it', old.ark),
            hint = 'use select ark_repoint(ark, url, by_client, by_text) or ark_tombstone(...)';
    end if;
    return new;
end $$;

-- The repoint path: appends ARK_CHANGE (before, after, when, by) and updates the target in one
-- transaction. Returns false when the ARK already points there (no change, no row).
create function ark_repoint(p_ark text, p_url text, p_by_client bigint, p_by_text text,
                            p_at timestamptz default now(), p_import_run bigint default null)
returns boolean language plpgsql as $$
declare cur ark%rowtype;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    if cur.url is not distinct from p_url then
        return false;
    end if;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            by_client, by_text, import_run_id)
    values (p_ark, cur.change_seq + 1, p_at, 'update', cur.url, p_url, cur.status, cur.status,
            p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, updated_at = p_at, updated_by = p_by_client, change_seq = cur.change_seq + 1
    where ark = p_ark;
    return true;
end $$;

-- Withdrawal is a tombstone: a status, a reason and a time, plus an ARK_CHANGE row; the row and
-- the name stay for ever.
create function ark_tombstone(p_ark text, p_reason text, p_by_client bigint, p_by_text text,
                              p_at timestamptz default now())
returns boolean language plpgsql as $$
declare cur ark%rowtype;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    if cur.status = 'unavailable' then
        return false;
    end if;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status,
                            reason, by_client, by_text)
    values (p_ark, cur.change_seq + 1, p_at, 'tombstone', cur.url, cur.url, cur.status, 'unavailable',
            p_reason, p_by_client, p_by_text);
    update ark set status = 'unavailable', tombstone_reason = p_reason, tombstoned_at = p_at,
                   updated_at = p_at, updated_by = p_by_client, change_seq = cur.change_seq + 1
    where ark = p_ark;
    return true;
end $$;

-- The export-acceptance path of `arkhe reconcile --apply` for an ARK whose status, tombstone
-- reason, ERC kernel, commitment or metadata differ from an export (a target-only difference goes
-- through ark_repoint). Like ark_repoint it appends exactly one ARK_CHANGE row (before and after
-- target, status, ERC as jsonb) with the update. action is 'tombstone' when the ARK becomes
-- unavailable (or its tombstone reason changes), 'restore' when it becomes public again, 'update'
-- when the target changes otherwise, else 'metadata'. A status never returns to reserved: a
-- reserved name was never published, and a published one cannot become unpublished (AK002).
-- Returns false, writing nothing, when the ARK already holds every given value.
create function ark_apply_export(p_ark text, p_url text, p_status text, p_reason text,
                                 p_who text, p_what text, p_when text, p_commitment text,
                                 p_metadata jsonb, p_by_client bigint, p_by_text text,
                                 p_import_run bigint, p_at timestamptz default now())
returns boolean language plpgsql as $$
declare cur ark%rowtype; act text;
begin
    select * into cur from ark where ark = p_ark for update;
    if not found then
        raise exception using errcode = 'AK002', message = format('ARK %s is not in the ledger', p_ark);
    end if;
    if cur.url is not distinct from p_url and cur.status = p_status
       and cur.tombstone_reason is not distinct from p_reason
       and cur.erc_who is not distinct from p_who and cur.erc_what is not distinct from p_what
       and cur.erc_when is not distinct from p_when and cur.commitment is not distinct from p_commitment
       and cur.metadata is not distinct from p_metadata then
        return false;
    end if;
    if p_status = 'reserved' and cur.status <> 'reserved' then
        raise exception using errcode = 'AK002',
            message = format('ARK %s: status %s never returns to reserved (a published name cannot be unpublished)', p_ark, cur.status);
    end if;
    act := case
        when p_status = 'unavailable' and (cur.status <> 'unavailable'
              or cur.tombstone_reason is distinct from p_reason) then 'tombstone'
        when p_status <> cur.status then 'restore'
        when p_url is distinct from cur.url then 'update'
        else 'metadata' end;
    insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, reason,
                            before_erc, after_erc, by_client, by_text, import_run_id)
    values (p_ark, cur.change_seq + 1, p_at, act, cur.url, p_url, cur.status, p_status, p_reason,
            jsonb_build_object('who', cur.erc_who, 'what', cur.erc_what, 'when', cur.erc_when,
                               'commitment', cur.commitment, 'metadata', cur.metadata,
                               'tombstone_reason', cur.tombstone_reason),
            jsonb_build_object('who', p_who, 'what', p_what, 'when', p_when,
                               'commitment', p_commitment, 'metadata', p_metadata,
                               'tombstone_reason', p_reason),
            p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, status = p_status, tombstone_reason = p_reason,
                   tombstoned_at = case when p_status <> 'unavailable' then null
                                        when cur.status = 'unavailable' then cur.tombstoned_at
                                        else p_at end,
                   erc_who = p_who, erc_what = p_what, erc_when = p_when, commitment = p_commitment,
                   metadata = p_metadata, updated_at = p_at, updated_by = p_by_client,
                   change_seq = cur.change_seq + 1
    where ark = p_ark;
    return true;
end $$;

-- ---------------------------------------------------------------- triggers, last (see the header)

do $$
declare t text;
begin
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    -- statement-level, so even a DELETE that would match no row is refused
    foreach t in array array['ledger_setting', 'naan', 'manager', 'shoulder', 'client', 'credential',
                             'import_run', 'ark', 'ark_change', 'receipt', 'shoulder_tally',
                             'mint_quota', 'audit_event', 'audit_summary'] loop
        execute format('create trigger %I before delete on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_delete', t);
        execute format('create trigger %I before truncate on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_truncate', t);
    end loop;
    foreach t in array array['ledger_setting', 'ark_change', 'receipt', 'audit_event', 'audit_summary'] loop
        execute format('create trigger %I before update on %I for each statement execute function arkhe_refuse_update()',
                       t || '_append_only', t);
    end loop;
end $$;

create trigger shoulder_update before update on shoulder
    for each row execute function arkhe_shoulder_update();
create trigger client_reach before insert or update on client
    for each row execute function arkhe_client_reach();
create trigger credential_kind before insert or update on credential
    for each row execute function arkhe_credential_kind();
create trigger ark_reach after insert on ark referencing new table as new_arks
    for each statement execute function arkhe_ark_reach();
create trigger ark_update before update on ark
    for each row execute function arkhe_ark_update();
