#!/usr/bin/env bash
# The judge's false-positive rate on this machine (run as root: `sudo bash bench/aa.sh`).
#
# PAIRS times: two sequential runs of the same thing (`run --dir d -n 1000 -r 10`, labels
# aN and bN, same machine, one after the other — the drift a bisect step sees), then
# `compare aN bN --fail-on regression`. Prints how many pairs were called a regression
# (exit 1), undecidable (125) or fine (0), and the wall-time changes. Goal: 0, at most 1
# of 20.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-20}
REPS=${REPS:-10}
N=${N:-1000}
FS=${FS:-btrfs}

cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /tmp/sigbench-aa.XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/aa.db

regressions=0; undecidable=0; fine=0
for i in $(seq 1 "$PAIRS"); do
    for side in a b; do
        "$sigbench" run --fs "$FS" --dir d -n "$N" -r "$REPS" --label "$side$i" --db "$db" \
            >/dev/null 2>&1
    done
    set +e
    "$sigbench" compare "a$i" "b$i" --all --fail-on regression --db "$db" >"$work/cmp" 2>"$work/err"
    code=$?
    set -e
    # The wall-time row: "%change" (with `~` when not significant) and its evidence.
    change=$(grep -m1 -E '/wall_ms$' "$work/cmp" | sed -E 's/ +/ /g' || true)
    case $code in
        0) fine=$((fine + 1)); verdict=ok ;;
        1) regressions=$((regressions + 1)); verdict=REGRESSION ;;
        125) undecidable=$((undecidable + 1)); verdict=undecidable ;;
        *) echo "pair $i: compare failed ($code): $(cat "$work/err")" >&2; exit 1 ;;
    esac
    printf 'pair %2d: %-12s %s\n' "$i" "$verdict" "$change"
done
echo "A/A pairs: $PAIRS at -r $REPS, N = $N, $FS: $regressions called a regression, $undecidable undecidable, $fine fine"
