-- arkhe ledger, version 1.
-- The promises of data-model.md "What the diagram cannot show" live here, as constraints and
-- triggers, so that they hold for every writer, not only for arkhe.
-- Refusals raise SQLSTATEs of class AK so callers classify them by code, never by text:
--   AK001 deletion refused (nothing is deleted; README decision 3)
--   AK002 update refused (identity columns, insert-only tables, the repoint path; decision 7)
--   AK003 retired is one-way
--   AK004 reach refused (reach comes from the client's registration only)
--   AK005 credential kind does not fit the subject type
-- Identifier columns are COLLATE "C" (decision 17); widths follow draft-kunze-ark §2.3 / §3.1 (decision 1).

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
    registered_at    timestamptz,
    created_at       timestamptz not null default now(),
    import_run_id    bigint
);

create table manager (
    id                  bigint generated always as identity primary key,
    naan                varchar(16) collate "C" not null references naan,
    name                text not null,
    default_shoulder_id bigint,
    commitment_level    text check (commitment_level in (
                            'Permanent: Unchanging Content', 'Permanent: Stable Content',
                            'Permanent: Dynamic Content', 'Not Guaranteed')),
    quota_per_day       integer check (quota_per_day > 0),
    active              boolean not null default true,
    succeeded_by_id     bigint references manager,
    created_at          timestamptz not null default now(),
    unique (naan, name),
    unique (id, naan)
);

create table shoulder (
    id            bigint generated always as identity primary key,
    naan          varchar(16) collate "C" not null references naan,
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
    draws         bigint not null default 0 check (draws >= 0),
    collisions    bigint not null default 0 check (collisions >= 0),
    created_at    timestamptz not null default now(),
    retired_at    timestamptz,
    import_run_id bigint,
    unique (naan, shoulder),
    unique (id, naan),
    unique (id, manager_id),
    -- a shoulder's NAAN matches its manager's
    foreign key (manager_id, naan) references manager (id, naan),
    -- only a shoulder of the first-digit convention may mint (decision 2)
    constraint shoulder_active_first_digit
        check (status <> 'active' or shoulder ~ '^/[bcdfghjkmnpqrstvwxz]+[0-9]$'),
    constraint shoulder_retired_at
        check ((status = 'retired') = (retired_at is not null))
);

-- The manager.default_shoulder_id <-> shoulder.manager_id cycle, created after both tables.
-- The default shoulder must be one the manager holds.
alter table manager add constraint manager_default_shoulder_fk
    foreign key (default_shoulder_id, id) references shoulder (id, manager_id)
    deferrable initially deferred;

create table client (
    id             bigint generated always as identity primary key,
    client_id      varchar(255) collate "C" not null unique,
    naan           varchar(16) collate "C" not null references naan,
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
    foreign key (manager_id, naan) references manager (id, naan),
    foreign key (shoulder_id, naan) references shoulder (id, naan),
    constraint client_naan_expires check (authority <> 'naan' or expires_at is not null),
    constraint client_manager_authority check (authority <> 'manager' or manager_id is not null)
);

create table credential (
    id              bigint generated always as identity primary key,
    client_pk       bigint not null references client,
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
    started_at  timestamptz not null default now(),
    finished_at timestamptz,
    source_file text not null,
    format      text not null,
    digest      text,
    dry_run     boolean not null default false,
    counts      jsonb
);

create table ark (
    -- insertion order: the audit's high-water mark; internal, never shown to a user
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
    -- the mint receipt (decision 6), null on an imported ARK; see the ark_receipt index below
    request_id       varchar(255) collate "C",
    payload_digest   bytea,
    -- one RI check covers the shoulder and that the shoulder belongs to the ARK's NAAN
    foreign key (shoulder_id, naan) references shoulder (id, naan),
    constraint ark_key_form check (ark = naan || '/' || assigned_name),
    constraint ark_receipt_whole check ((request_id is null) = (payload_digest is null)),
    constraint ark_receipt_digest check (payload_digest is null or length(payload_digest) = 16),
    constraint ark_receipt_client check (request_id is null or created_by is not null)
);
create index ark_seq_brin on ark using brin (seq);

-- Receipts (README decision 6): the ledger's (client, request ID) -> ARK record with a 16-byte
-- payload digest, written with the ARK. They live on the ark row itself — request_id and
-- payload_digest, keyed by (created_by, request_id) — because a table of their own cost 143 B per
-- ARK; on the row they cost 76 B per ARK less (measured on the Tate collection; sizing/doc.go).
-- Imported ARKs carry no receipt and stay out of the partial index. The mint_receipt view keeps the
-- receipt vocabulary for readers; it is the ark row, so a receipt's ARK always exists.
create unique index ark_receipt on ark (created_by, request_id) where request_id is not null;

create view mint_receipt as
    select created_by as client_pk, request_id, ark, payload_digest, created_at
    from ark where request_id is not null;

create table ark_change (
    id            bigint generated always as identity primary key,
    ark           varchar(272) collate "C" not null references ark (ark),
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
    xact          xid8 not null default pg_current_xact_id()
);
create index ark_change_ark on ark_change (ark, id);
create index ark_change_at on ark_change (at);

create table audit_event (
    id        bigint generated always as identity primary key,
    at        timestamptz not null default now(),
    client_id varchar(255) collate "C",
    authority text,
    action    text not null,
    target    text,
    detail    jsonb
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

-- ---------------------------------------------------------------- nothing is deleted
-- Statement-level, so even a DELETE that would match no row is refused.

create function arkhe_refuse_delete() returns trigger language plpgsql as $$
begin
    raise exception using errcode = 'AK001',
        message = format('%s on %s refused: %s rows are never deleted (arkhe README decision 3)',
                         tg_op, tg_table_name, tg_table_name),
        hint = case tg_table_name
                   when 'ark' then 'tombstone the ARK instead: select ark_tombstone(...)'
                   when 'shoulder' then 'retire the shoulder instead: status = ''retired'''
                   when 'credential' then 'revoke it instead: active = false'
                   when 'client' then 'deactivate it instead: active = false'
                   else 'nothing in an arkhe ledger is deleted' end;
end $$;

create function arkhe_refuse_update() returns trigger language plpgsql as $$
begin
    raise exception using errcode = 'AK002',
        message = format('UPDATE on %s refused: the table is append-only', tg_table_name);
end $$;

do $$
declare t text;
begin
    foreach t in array array['naan', 'manager', 'shoulder', 'client', 'credential', 'ark',
                             'ark_change', 'audit_event', 'import_run'] loop
        execute format('create trigger %I before delete on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_delete', t);
        execute format('create trigger %I before truncate on %I for each statement execute function arkhe_refuse_delete()',
                       t || '_no_truncate', t);
    end loop;
    -- mint_receipt is a view of ark: a DELETE through it reaches ark_no_delete (AK001), an UPDATE
    -- ark_update (AK002; its columns are identity columns), and PostgreSQL refuses TRUNCATE of a view.
    foreach t in array array['ark_change', 'audit_event'] loop
        execute format('create trigger %I before update on %I for each statement execute function arkhe_refuse_update()',
                       t || '_append_only', t);
    end loop;
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
            message = format('shoulder %s of NAAN %s is retired; retired is one-way (data-model.md)', old.shoulder, old.naan);
    end if;
    if old.retired_at is not null and new.retired_at is distinct from old.retired_at then
        raise exception using errcode = 'AK003',
            message = format('shoulder %s of NAAN %s: retired_at never changes', old.shoulder, old.naan);
    end if;
    return new;
end $$;
create trigger shoulder_update before update on shoulder
    for each row execute function arkhe_shoulder_update();

-- ---------------------------------------------------------------- clients: reach is a registration attribute

create function arkhe_client_reach() returns trigger language plpgsql as $$
declare s_manager bigint; s_status text;
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
        select manager_id, status into s_manager, s_status from shoulder where id = new.shoulder_id;
        if s_manager is distinct from new.manager_id then
            raise exception using errcode = 'AK004',
                message = format('client %s: a manager client can be pinned only to a shoulder its manager holds', new.client_id);
        end if;
    end if;
    return new;
end $$;
create trigger client_reach before insert or update on client
    for each row execute function arkhe_client_reach();

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
create trigger credential_kind before insert or update on credential
    for each row execute function arkhe_credential_kind();

-- ---------------------------------------------------------------- ARKs: insert-only, reach, repoint path

-- Minted rows (import_run_id is null) must be within the minting client's registered reach, on an
-- active shoulder. Checked once per statement over the transition table, so COPY pays one join per
-- batch, not a trigger call per row.
create function arkhe_ark_reach() returns trigger language plpgsql as $$
declare bad record;
begin
    select n.ark, n.created_by, c.client_id, s.status, s.shoulder, n.naan into bad
    from new_arks n
    join shoulder s on s.id = n.shoulder_id
    left join client c on c.id = n.created_by
    where n.import_run_id is null
      and not (
          c.id is not null and c.active
          and (c.expires_at is null or c.expires_at > now())
          and 'ark:mint' = any (c.allowed_scopes)
          and s.status = 'active'
          and (c.shoulder_id is null or c.shoulder_id = s.id)
          and (   c.authority = 'system'
               or (c.authority = 'naan' and c.naan = s.naan)
               or (c.authority = 'manager' and c.manager_id = s.manager_id)))
    limit 1;
    if found then
        raise exception using errcode = 'AK004',
            message = format('mint of %s refused: client %s may not mint in shoulder %s (status %s) of NAAN %s; reach comes from the client''s registration only',
                             bad.ark, coalesce(bad.client_id, '(none)'), bad.shoulder, bad.status, bad.naan);
    end if;
    return null;
end $$;
create trigger ark_reach after insert on ark referencing new table as new_arks
    for each statement execute function arkhe_ark_reach();

-- Every UPDATE of ark is refused unless an ARK_CHANGE row for that ARK, describing exactly the new
-- target and status, was appended earlier in the same transaction (the repoint path, decision 7).
-- INSERT ... ON CONFLICT (ark) DO UPDATE therefore fails: minting never becomes an update.
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
    if not exists (select 1 from ark_change c
                   where c.ark = new.ark and c.xact = pg_current_xact_id()
                     and c.after_url is not distinct from new.url
                     and c.after_status is not distinct from new.status) then
        raise exception using errcode = 'AK002',
            message = format('UPDATE of ARK %s refused: minting never becomes an update; a change goes through the repoint path, which appends ARK_CHANGE in the same transaction', old.ark),
            hint = 'use select ark_repoint(ark, url, by_client, by_text) or ark_tombstone(...)';
    end if;
    return new;
end $$;
create trigger ark_update before update on ark
    for each row execute function arkhe_ark_update();

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
    insert into ark_change (ark, at, action, before_url, after_url, before_status, after_status,
                            by_client, by_text, import_run_id)
    values (p_ark, p_at, 'update', cur.url, p_url, cur.status, cur.status, p_by_client, p_by_text, p_import_run);
    update ark set url = p_url, updated_at = p_at, updated_by = p_by_client where ark = p_ark;
    return true;
end $$;

-- Withdrawal is a tombstone: a status, a reason and a time, plus an ARK_CHANGE row (decision 3).
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
    insert into ark_change (ark, at, action, before_url, after_url, before_status, after_status,
                            reason, by_client, by_text)
    values (p_ark, p_at, 'tombstone', cur.url, cur.url, cur.status, 'unavailable', p_reason, p_by_client, p_by_text);
    update ark set status = 'unavailable', tombstone_reason = p_reason, tombstoned_at = p_at,
                   updated_at = p_at, updated_by = p_by_client
    where ark = p_ark;
    return true;
end $$;
