-- arkhe ledger: the tamper signals of a clean full audit (`arkhe verify --since`).
--
-- audit_summary.signals  what a clean full audit saw of the ledger's tables besides their rows,
--               per node (one on a single server; the coordinator and every worker on Citus),
--               so a later `arkhe verify --since` can tell whether anything changed behind the
--               ledger's paths without reading every ARK again:
--                 {"nodes": {NODE: {"stats_reset": ..., "tables": {RELATION: [file node,
--                   inserted, updated, deleted, HOT-updated], ...}}, ...},
--                  "schema": md5 of the columns, constraints, indexes and migrations of the
--                   ledger's tables}
--               RELATION is a table on a single server, a shard placement (table_SHARDID) on
--               Citus; the counters are the statistics collector's (pg_stat_all_tables). Null
--               for an audit that recorded none: --since then runs a full audit.

alter table audit_summary add column signals jsonb;
