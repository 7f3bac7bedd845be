#!/usr/bin/env bash
# The judge's false-positive rate on this machine (run as root: `sudo bash bench/aa.sh`).
#
# PAIRS times: two sequential runs of the same thing (labels aN and bN, same machine, one
# after the other — the drift a bisect step sees), then `compare aN bN --fail-on
# regression`. Prints per pair the verdict (exit 1 regression, 125 undecidable, 0 fine),
# the wall-time row and each side's spread (max/min − 1 of wall_ns per directory, the
# largest), and a summary. Goal: at most 1 of 20 called a regression.
#
#   sudo bash bench/aa.sh                                    # on the host: btrfs, -r 10
#   sudo REPS=3 bash bench/aa.sh                             # the small-sample rule
#   sudo KERNEL=linux-image-6.1….deb REPS=3 bash bench/aa.sh # in a guest, icount clock
#   sudo KERNEL=… CLOCK=host bash bench/aa.sh                # in a guest, plain TCG
#
# Variables: PAIRS (20), REPS (10), N (1000; 250 with KERNEL), FS (btrfs), SIG (test3),
# DIRS (`d` on the host; the signature's own with KERNEL), KERNEL, CLOCK, KEEP; SIGB: run
# another signature (of the same name) on the b side — then it measures power, not false
# positives (bench/slower.sh writes a test3 that is ~20 % slower). BUSY=1: one spinning
# process more than there are CPUs runs beside every b side — a busy machine, which the
# judge should call inconclusive (exit 125, "the machine was busy"), not a regression.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-20}
REPS=${REPS:-10}
FS=${FS:-btrfs}
SIG=${SIG:-test3}
KERNEL=${KERNEL:-}
CLOCK=${CLOCK:-}
if [ -n "$KERNEL" ]; then
    N=${N:-250}
    DIRS=${DIRS:-}
    KERNEL=$(realpath "$KERNEL")
else
    N=${N:-1000}
    DIRS=${DIRS-d}
fi

cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /tmp/sigbench-aa.XXXXXX)
# KEEP=1 keeps the runs (aa.db) to judge again later, e.g. with another rule.
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "runs kept in $work/aa.db"; fi
db=$work/aa.db

args=("$SIG" --fs "$FS" -n "$N" -r "$REPS")
for d in $DIRS; do args+=(--dir "$d"); done
[ -n "$KERNEL" ] && args+=(--kernel "$KERNEL")
[ -n "$CLOCK" ] && args+=(--clock "$CLOCK")

# The largest max/min − 1 of wall_ns over the directories of a run document, in percent.
spread() {
    awk '/"dir":/ { gsub(/[",]/, "", $2); dir = $2 }
         /"wall_ns":/ { gsub(/,/, "", $2); v = $2 + 0
                        if (!(dir in lo) || v < lo[dir]) lo[dir] = v
                        if (!(dir in hi) || v > hi[dir]) hi[dir] = v }
         END { m = 0; for (d in lo) { s = (hi[d] / lo[d] - 1) * 100; if (s > m) m = s }
               printf "%.3f", m }' "$1"
}

regressions=0; undecidable=0; busy=0; fine=0; worst=0
spinners=()
spin() { for _ in $(seq 0 "$(nproc)"); do (while :; do :; done) & spinners+=($!); done; }
unspin() { [ ${#spinners[@]} -gt 0 ] && kill "${spinners[@]}" 2>/dev/null; wait "${spinners[@]}" 2>/dev/null || true; spinners=(); }
trap 'unspin' INT TERM
started=$(date +%s)
for i in $(seq 1 "$PAIRS"); do
    for side in a b; do
        side_args=("${args[@]}")
        [ "$side" = b ] && [ -n "${SIGB:-}" ] && side_args[0]=$SIGB
        [ "$side" = b ] && [ -n "${BUSY:-}" ] && spin
        "$sigbench" run "${side_args[@]}" --label "$side$i" --db "$db" --json "$work/$side$i.json" \
            >/dev/null 2>"$work/run.err" || { unspin; cat "$work/run.err" >&2; exit 1; }
        unspin
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
        125) if grep -q 'the machine was busy' "$work/err"; then busy=$((busy + 1)); verdict=busy
             else undecidable=$((undecidable + 1)); verdict=undecidable; fi ;;
        *) echo "pair $i: compare failed ($code): $(cat "$work/err")" >&2; exit 1 ;;
    esac
    sa=$(spread "$work/a$i.json"); sb=$(spread "$work/b$i.json")
    worst=$(awk -v w="$worst" -v a="$sa" -v b="$sb" 'BEGIN { m = w; if (a > m) m = a; if (b > m) m = b; print m }')
    printf 'pair %2d: %-12s spread a %6s%%  b %6s%%  %s\n' "$i" "$verdict" "$sa" "$sb" "$change"
done
echo "${SIGB:+A/B (b: $SIGB) }A/A pairs: $PAIRS at -r $REPS, N = $N, $SIG on $FS${KERNEL:+ in a guest of $(basename "$KERNEL")}${CLOCK:+ (--clock $CLOCK)}${BUSY:+, b sides beside $(( $(nproc) + 1 )) spinning processes}: $regressions called a regression, $busy inconclusive (busy), $undecidable undecidable, $fine fine; largest spread within a run ${worst}%; $(( $(date +%s) - started )) s"
