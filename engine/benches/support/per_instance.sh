#!/bin/sh
# Instructions and CPU time per instance of one shape of a bench, by difference: the
# bench binary runs the shape once with N and once with 2N instances
# (THRESH_BENCH_INSTANCES, `support::counted_instances`), so what does not grow with
# the count (the runtime, the engine, the first allocations) cancels.
#
#   engine/benches/support/per_instance.sh BENCH SHAPE [N] [REPEATS]
#   engine/benches/support/per_instance.sh service chain-100 2000
#   engine/benches/support/per_instance.sh core single 20000
#
# Prints callgrind's instructions (Ir) per instance, then `perf stat`'s task-clock
# per instance (the median of REPEATS alternating runs at N and 2N, default 5). Set
# BIN to a bench binary to skip the build (as when comparing two builds).
set -eu
bench=$1
shape=$2
n=${3:-10000}
repeats=${4:-5}
cd "$(dirname "$0")/../../.."
if [ -z "${BIN:-}" ]; then
    BIN=$(CARGO_INCREMENTAL=0 cargo bench -p thresh --bench "$bench" --no-run 2>&1 |
        sed -n 's/.*Executable.*(\(.*\)).*/\1/p' | tail -n 1)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ir() {
    THRESH_BENCH_INSTANCES=$1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
        "$BIN" --bench "$shape" >/dev/null 2>"$tmp/log"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log"
}
ir1=$(ir "$n")
ir2=$(ir $((2 * n)))
echo "$bench $shape: $(( (ir2 - ir1) / n )) Ir per instance (callgrind, $n vs $((2 * n)) instances: $ir1, $ir2)"
cpu() {
    THRESH_BENCH_INSTANCES=$1 perf stat -x, -e task-clock "$BIN" --bench "$shape" 2>&1 >/dev/null |
        sed -n 's/^\([0-9.]*\),msec,task-clock.*/\1/p'
}
: >"$tmp/d"
i=0
while [ "$i" -lt "$repeats" ]; do
    a=$(cpu "$n")
    b=$(cpu $((2 * n)))
    echo "$a $b" | awk -v n="$n" '{ printf "%.1f\n", ($2 - $1) * 1e6 / n }' >>"$tmp/d"
    i=$((i + 1))
done
med=$(sort -n "$tmp/d" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "$bench $shape: $med ns CPU per instance (perf stat task-clock, median of $repeats pairs: $(tr '\n' ' ' <"$tmp/d"))"
