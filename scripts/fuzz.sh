#!/usr/bin/env bash
# Coverage-guided fuzzing of what a client or a damaged file controls (fuzz/, cargo-fuzz
# with libFuzzer, no sanitizer: stable Rust). Installs cargo-fuzz from crates.io if it is
# missing. Usage:
#   scripts/fuzz.sh [RUNS_PER_TARGET] [TARGET ...]     (default: 10000000 runs, every target)
# A crash leaves its input in fuzz/artifacts/<target>/ and fails the script: copy it into
# fuzz/regressions/<target>/ with the fix (crates/*/tests/fuzz_regressions.rs run them).
# CI runs a short pass (scripts/fuzz.sh 20000); each target's figures are printed as
# libFuzzer's last status line.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
runs="${1:-10000000}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(wal_record page control_files wire copy_in sql)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    start=$(date +%s)
    log=$(mktemp)
    if ! cargo fuzz run -s none "$t" "corpus/$t" -- -runs="$runs" -max_len=4096 >"$log" 2>&1; then
        grep -v '^#' "$log" | tail -40
        echo "fuzz $t: FAILED (input in fuzz/artifacts/$t/)"
        rm -f "$log"
        exit 1
    fi
    status=$(grep -E '^#[0-9]+' "$log" | tail -1 | cut -c1-100)
    rm -f "$log"
    echo "fuzz $t: $runs runs in $(( $(date +%s) - start )) s, no crash; last status: $status"
done
