// duckread.mjs: an independent reader for files written by package report.
//
// Usage: node duckread.mjs FILE SQL
//
// FILE is opened with DuckDB as a view named t: read_parquet for .parquet,
// read_csv (header, allow_quoted_nulls=false, all_varchar, so "" is the empty
// string and an unquoted empty field is NULL — the PostgreSQL COPY convention)
// for .csv, read_json (newline-delimited) for .jsonl. The session time zone is
// UTC. SQL is then run against t. Prints one JSON object on stdout:
//
//   {"duckdb": "v1.5.6", "count": N, "describe": [{"name":..., "type":..., "null":...}], "rows": [...]}
//
// where count is SELECT count(*) FROM t, describe is DESCRIBE t and rows is the
// result of SQL (JSON-safe: BIGINT and TIMESTAMP values come back as strings).
// Exit status 2 with a message on stderr on any error.
//
// @duckdb/node-api is resolved from $ARKHE_NODE_MODULES if set, else from
// $ARKHE_TOOLS/node_modules, else from <module root>/.tools/node_modules
// (installed by `make test`, target duckdb:
// npm install --prefix .tools @duckdb/node-api@<pinned version>).
// Tested with 1.4.1-r.4 (DuckDB v1.4.1) and 1.5.6-r.1 (DuckDB v1.5.6).
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function fail(msg) {
  process.stderr.write(`duckread: ${msg}\n`);
  process.exit(2);
}

const [file, sql] = process.argv.slice(2);
if (!file || !sql) fail('usage: node duckread.mjs FILE SQL');

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.env.ARKHE_NODE_MODULES
  || join(process.env.ARKHE_TOOLS || resolve(here, '..', '..', '.tools'), 'node_modules');
let duckdb;
try {
  const req = createRequire(join(modules, 'resolver.cjs'));
  duckdb = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
} catch (e) {
  fail(`cannot load @duckdb/node-api from ${modules} (run \`make test\`, which installs it): ${e.message}`);
}

const lit = (s) => `'${s.replaceAll("'", "''")}'`;
let source;
switch (extname(file).toLowerCase()) {
  case '.parquet':
    source = `read_parquet(${lit(file)})`;
    break;
  case '.csv':
    source = `read_csv(${lit(file)}, header=true, allow_quoted_nulls=false, all_varchar=true, auto_detect=true)`;
    break;
  case '.jsonl':
    source = `read_json(${lit(file)}, format='newline_delimited')`;
    break;
  default:
    fail(`unknown file extension: ${file}`);
}

try {
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run("SET TimeZone = 'UTC'");
  await conn.run(`CREATE VIEW t AS SELECT * FROM ${source}`);
  const version = (await conn.runAndReadAll('SELECT version() AS v')).getRowObjectsJson()[0].v;
  const count = (await conn.runAndReadAll('SELECT count(*)::VARCHAR AS n FROM t')).getRowObjectsJson()[0].n;
  const describe = (await conn.runAndReadAll('DESCRIBE t')).getRowObjectsJson()
    .map((r) => ({ name: r.column_name, type: r.column_type, null: r.null }));
  const rows = (await conn.runAndReadAll(sql)).getRowObjectsJson();
  process.stdout.write(JSON.stringify({ duckdb: version, count: Number(count), describe, rows }) + '\n');
  conn.closeSync();
  instance.closeSync();
} catch (e) {
  fail(e.message);
}
