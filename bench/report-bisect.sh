#!/usr/bin/env bash
# How long `report --bisect` takes as a step's samples grow (it was quadratic in them: the
# median's confidence interval summed the binomial CDF anew for every order statistic).
# Prints the time per size; linear means ~10x per 10x. Run: `bash bench/report-bisect.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /tmp/sigbench-rb.XXXXXX)
trap 'rm -rf "$work"' EXIT
for n in 1000 10000 100000 1000000; do
    awk -v n="$n" 'BEGIN {
        printf "{\"schema\":\"sigbench.bisect\",\"version\":1,\"what\":\"2 kernels\",\"signature\":\"s\",\"first_bad\":\"b\",\"kernels\":[\"a\",\"b\"],\"metric\":\"wall_ms\",\"steps\":[{\"index\":0,\"kernel\":\"a\",\"samples\":["
        for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), i % 977
        printf "],\"call\":\"good\",\"why\":\"\"},{\"index\":1,\"kernel\":\"b\",\"samples\":[2000],\"call\":\"bad\",\"why\":\"\"}],\"first_bad_index\":1,\"candidates\":[]}\n"
    }' > "$work/b.json"
    t0=$(date +%s.%N)
    "$sigbench" report --bisect "$work/b.json" -o "$work/b.html" 2>/dev/null
    printf 'samples %8d: %6.2f s, page %6d KiB\n' "$n" "$(echo "$(date +%s.%N) - $t0" | bc)" $(( $(stat -c %s "$work/b.html") / 1024 ))
done
