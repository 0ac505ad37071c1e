-- arkhe ledger, version 2: what bulk mint (issue 3) needs beyond version 1.
--
-- mint_quota counts new mints per manager per UTC day (README decision 10: replays excluded).
-- `arkhe mint` adds each batch's new mints to the row of the shoulder's manager and today's UTC
-- date in the same transaction as the ARKs, and rolls the batch back when the sum passes
-- manager.quota_per_day, so the count is exact under concurrent runs and after a crash. It is kept
-- for every manager, with or without a quota, so a quota set in the middle of a day applies to
-- that day's mints already made. Rows are never deleted (decision 3); days simply accumulate.
create table mint_quota (
    manager_id bigint not null references manager,
    day        date not null,
    minted     bigint not null default 0 check (minted >= 0),
    primary key (manager_id, day)
);

create trigger mint_quota_no_delete before delete on mint_quota
    for each row execute function arkhe_refuse_delete();
create trigger mint_quota_no_truncate before truncate on mint_quota
    for each statement execute function arkhe_refuse_delete();
