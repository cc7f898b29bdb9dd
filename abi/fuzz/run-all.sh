#!/bin/sh
# Runs every fuzz target for RUNS executions (default one million), one after another on one
# core, starting from (and adding to) corpus/<target>. One summary line per target: time,
# executions, coverage (cov = edges, ft = features) and whether it crashed.
# Usage: abi/fuzz/run-all.sh [RUNS] [TARGET...]
set -u
cd "$(dirname "$0")"
runs=${1:-1000000}
[ $# -gt 0 ] && shift
targets=${*:-$(cargo fuzz list)}
mkdir -p logs
# The seeds, written by the crate's own encoders.
SVELT_FUZZ_WRITE_CORPUS="$PWD/corpus" cargo +1.95.0 test -q -p svelt-abi --test fuzz seeds >/dev/null
# Safe Rust only (no unsafe in svelt-abi): no sanitizer; overflow checks stay on.
nice -n 10 cargo fuzz build -s none >/dev/null 2>&1 || { echo "build failed"; exit 1; }
for t in $targets; do
    start=$(date +%s)
    nice -n 10 cargo fuzz run -s none "$t" "corpus/$t" -- \
        -runs="$runs" -print_final_stats=1 >"logs/$t.log" 2>&1
    rc=$?
    end=$(date +%s)
    done_line=$(grep -E '^#[0-9]+.*(DONE|INITED)' "logs/$t.log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log")
    echo "$t: rc=$rc time=$((end - start))s execs=${execs:-?} ${done_line:-no stats}"
done
