#!/bin/bash
# promise-cost.sh: where the server's time goes per minted ARK, mechanism by mechanism.
#
# It mints ROWS rows with arkhe into a fresh ledger, dumps the final ARK rows (with their
# receipts) in COPY binary form in batches of BATCH rows (arkhe mint's default batch), and then
# COPYs them, one statement and transaction per batch on one connection as a mint worker does,
# into clones of an empty ledger from which one mechanism at a time is removed: the statement
# triggers that read a transition table (the reach check, with the registered-shoulder check in
# it on the single layout, and the key check), the shoulder check where it is a mechanism of its
# own, the CHECK constraints, the BRIN index, the receipt index, the identity column; "bare" keeps
# only the ARK primary key, the receipt index and the identity. PostgreSQL fills a transition
# table for every trigger that declares one, enabled or not, so those variants drop the triggers
# instead of disabling them. "work_mem_1mb" keeps everything and runs the COPYs with work_mem =
# 1MB, so that the transition table spills to a temporary file instead of growing in memory.
# Each variant's cost is the server CPU time (user + system) of the backend that ran its COPYs,
# read from /proc/self/stat through pg_read_file, so it hardly depends on what else the machine
# runs. Variants alternate over ROUNDS rounds; the table gives each variant's median and its
# saving against "full".
#
# usage: bench/promise-cost.sh ARKHE_BINARY 'postgres://postgres@/postgres?host=/path/to/socket' [ROWS] [ROUNDS] [BATCH]
# The URL must name a superuser on a throw-away server on this machine (pg_read_file of /proc,
# COPY from a server file, CREATE DATABASE); the script creates and drops databases pc_*.
set -euo pipefail
arkhe=$1 url=$2 rows=${3:-500000} rounds=${4:-3} batch=${5:-100000}
dir=$(mktemp -d /tmp/arkhe-promise-cost.XXXXXX)
chmod 777 "$dir"  # the server writes and reads the dump
trap 'rm -rf "$dir"' EXIT
db() { printf '%s' "$url" | sed -E "s#^(postgres(ql)?://[^/]*/)[^?]*#\1$1#"; }
P="psql -X -q -v ON_ERROR_STOP=1"
# the columns arkhe mint COPYs (change_seq among them, as NULL: a minted row stores no count)
cols="ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when, change_seq, created_at, created_by, request_id, payload_digest"

$P "$url" -c "drop database if exists pc_tpl" -c "drop database if exists pc_src" -c "create database pc_tpl"
"$arkhe" --database-url "$(db pc_tpl)" init --test-registration >/dev/null
$P "$url" -c "create database pc_src template pc_tpl"
awk -v n="$rows" 'BEGIN { print "request_id,url,who,what,when";
    for (i = 1; i <= n; i++) printf "obj-%09d,https://collection.example.org/objects/%d,Maker %d,Title of object %d,%d\n", i, i, i % 977, i, 1600 + i % 400 }' > "$dir/m.csv"
"$arkhe" --database-url "$(db pc_src)" mint --client test-minter -o "$dir/map.csv" "$dir/m.csv" >/dev/null 2>&1
# one file per batch, cut at the seq that starts each (read once)
mapfile -t starts < <(psql -X -At "$(db pc_src)" -c "select seq from (select seq, row_number() over (order by seq) - 1 as n from ark) s where n % $batch = 0 order by seq")
batches=${#starts[@]}
for ((b = 0; b < batches; b++)); do
    upto=${starts[b + 1]:-}
    $P "$(db pc_src)" -c "copy (select $cols from ark where seq >= ${starts[b]}${upto:+ and seq < $upto} order by seq) to '$dir/rows.$b.bin' with (format binary)"
done

drop_checks="alter table ark $(psql -X -At "$(db pc_tpl)" -c "select string_agg(format('drop constraint %I', conname), ', ') from pg_constraint where conrelid = 'ark'::regclass and contype = 'c'");"
# The shoulder check is a trigger of its own (ark_in_shoulder), a foreign key (the citus layout), or
# part of ark_reach (the single layout since it checks a statement's ARKs in one pass: no variant).
shoulder_check=
if [ "$(psql -X -At "$(db pc_tpl)" -c "select count(*) from pg_trigger where tgrelid = 'ark'::regclass and tgname = 'ark_in_shoulder'")" = 1 ]; then
    shoulder_check="alter table ark disable trigger ark_in_shoulder;"
elif [ "$(psql -X -At "$(db pc_tpl)" -c "select count(*) from pg_constraint where conrelid = 'ark'::regclass and conname = 'ark_shoulder_id_naan_fkey'")" = 1 ]; then
    shoulder_check="alter table ark drop constraint ark_shoulder_id_naan_fkey;"
fi
drop_transition=$(psql -X -At "$(db pc_tpl)" -c "select string_agg(format('drop trigger %I on ark;', tgname), ' ') from pg_trigger where tgrelid = 'ark'::regclass and not tgisinternal and tgnewtable is not null")
declare -A V=(
    [full]="select 1"
    [no_transition_triggers]="$drop_transition"
    [no_shoulder_check]="$shoulder_check"
    [no_checks]="$drop_checks"
    [no_brin]="drop index ark_seq_brin;"
    [no_receipt_index]="drop index ark_receipt;"
    [no_identity]="alter table ark alter column seq drop identity, alter column seq set default 0;"
    [work_mem_1mb]="select 1"
    [bare]="$drop_transition $shoulder_check $drop_checks drop index ark_seq_brin;"
)
order=(full no_transition_triggers ${shoulder_check:+no_shoulder_check} work_mem_1mb no_checks no_brin no_receipt_index no_identity bare)
: > "$dir/cpu"
for round in $(seq "$rounds"); do
    for v in "${order[@]}"; do
        $P "$url" -c "drop database if exists pc_$v" -c "create database pc_$v template pc_tpl"
        $P "$(db pc_$v)" -c "${V[$v]}" >/dev/null
        {
            [ "$v" = work_mem_1mb ] && echo "set work_mem = '1MB';"
            echo "select split_part(pg_read_file('/proc/self/stat'), ' ', 14)::int + split_part(pg_read_file('/proc/self/stat'), ' ', 15)::int as c0 \\gset"
            for ((b = 0; b < batches; b++)); do echo "copy ark ($cols) from '$dir/rows.$b.bin' with (format binary);"; done
            echo "select (split_part(pg_read_file('/proc/self/stat'), ' ', 14)::int + split_part(pg_read_file('/proc/self/stat'), ' ', 15)::int - :c0) / 100.0;"
        } > "$dir/copy.sql"
        cpu=$($P -At "$(db pc_$v)" -f "$dir/copy.sql")
        echo "$v $cpu" >> "$dir/cpu"
        $P "$url" -c "drop database pc_$v"
    done
done
$P "$url" -c "drop database pc_src" -c "drop database pc_tpl"
echo "server CPU of COPYing $rows minted ARK rows in $batches statements of up to $batch, median of $rounds rounds (seconds; per million rows)"
for v in "${order[@]}"; do
    awk -v v="$v" '$1 == v { print $2 }' "$dir/cpu" | sort -n | awk -v v="$v" -v n="$rows" '{ a[NR] = $1 } END {
        m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%s %.2f %.2f\n", v, m, m * 1000000 / n }'
done | awk 'NR == 1 { full = $2 } { printf "%-22s %7.2f s  %7.2f s/M  saves %5.1f %%\n", $1, $2, $3, 100 * (full - $2) / full }'
