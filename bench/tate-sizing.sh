#!/bin/sh
# bench/tate-sizing.sh ARKHE_BINARY TATE_FILE MAPPING [TARGET]
#
# The Tate ledger as loaded: mints TATE_FILE with MAPPING as `make run` does (init
# --test-registration, then mint as test-minter), into a throw-away embedded cluster, prints
# `arkhe sizing` of it and one line with the octets of ark + receipt per ARK all-in against
# TARGET (default 360; as loaded: no REINDEX). The cluster is stopped and removed on exit.
# Exit status: sizing's (0, or 1 for its findings); 2 when the set-up or the mint fails, with
# its output.
set -u
bin=$1 tate=$2 map=$3 target=${4:-360}
d=$(mktemp -d /tmp/arkhe-bench-tate.XXXXXX) || exit 2
chmod 755 "$d" # the cluster's server runs as the postgres user when this runs as root
export ARKHE_DATA_DIR="$d/data"
cleanup() {
	"$bin" db stop >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
echo "bench tate: minting $tate as make run does, into a throw-away embedded cluster in $d"
"$bin" init --test-registration >"$d/init.log" 2>&1 || { cat "$d/init.log"; exit 2; }
"$bin" mint --client test-minter --map "$map" --out "$d/tate-mintmap.csv" --rejects "$d/tate-rejects.csv" "$tate" >"$d/mint.log" 2>&1 ||
	{ cat "$d/mint.log"; exit 2; }
grep -E '^ *(read|minted|rejected|elapsed) ' "$d/mint.log"
"$bin" sizing >"$d/sizing.txt"
rc=$?
cat "$d/sizing.txt"
awk -v t="$target" '/^ark \+ receipt, per ARK \(all-in\)/ {
	v = $7 + 0
	printf "Tate ledger as loaded: ark + receipt %.1f B per ARK all-in (target <= %d: %s)\n", v, t, (v <= t ? "met" : "not met")
	found = 1
} END { if (!found) { print "bench tate: arkhe sizing printed no ark + receipt line"; exit 2 } }' "$d/sizing.txt" || exit 2
exit $rc
