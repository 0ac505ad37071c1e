#!/bin/sh
# bench/tate-sizing.sh ARKHE_BINARY TARGET
#
# The Tate ledger as loaded: runs `make run` (init --test-registration, then the Tate mint) with
# ARKHE_DATA_DIR, RUN_MINTMAP and RUN_REJECTS in a throw-away directory, prints `arkhe sizing` of
# that ledger and one line with the octets of ark + receipt per ARK all-in against TARGET (as
# loaded: no REINDEX). Run it from the checkout (make bench-tate does). The cluster is stopped
# and removed on exit. Exit status: sizing's (0, or 1 for its findings); 2 when make run fails
# (its output is printed) or sizing prints no ark + receipt line.
set -u
bin=$1 target=$2
d=$(mktemp -d /tmp/arkhe-bench-tate.XXXXXX) || exit 2
chmod 755 "$d" # the cluster's server runs as the postgres user when this runs as root
export ARKHE_DATA_DIR="$d/data"
cleanup() {
	"$bin" db stop >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
echo "bench tate: make run into a throw-away embedded cluster in $d"
make --no-print-directory run RUN_MINTMAP="$d/tate-mintmap.csv" RUN_REJECTS="$d/tate-rejects.csv" >"$d/run.log" 2>&1 || { cat "$d/run.log"; exit 2; }
grep -E '^ *(read|minted|rejected|elapsed) ' "$d/run.log"
"$bin" sizing >"$d/sizing.txt"
rc=$?
cat "$d/sizing.txt"
awk -v t="$target" '/^ark \+ receipt, per ARK \(all-in\)/ {
	v = $7 + 0
	printf "Tate ledger as loaded: ark + receipt %.1f B per ARK all-in (target <= %d: %s)\n", v, t, (v <= t ? "met" : "not met")
	found = 1
} END { if (!found) { print "bench tate: arkhe sizing printed no ark + receipt line"; exit 2 } }' "$d/sizing.txt" || exit 2
exit $rc
