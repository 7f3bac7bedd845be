#!/usr/bin/env bash
# What the icount clock costs in wall-clock time against plain TCG, for the same plan
# (run as root: `sudo KERNEL=linux-image-….deb bash bench/icount-cost.sh`).
#
# ROUNDS times, alternating: `run SIG --kernel KERNEL --clock icount` and `--clock host`
# (both TCG), each timed whole (boot, plan, results). Prints every time, the medians and
# their ratio. Target: icount at most 1.5× plain TCG.
#
# Variables: KERNEL (required), ROUNDS (3), SIG (test3), N (250), REPS (3), FS (btrfs).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${KERNEL:?give KERNEL=path/to/linux-image-….deb}"
KERNEL=$(realpath "$KERNEL")
ROUNDS=${ROUNDS:-3}
SIG=${SIG:-test3}
N=${N:-250}
REPS=${REPS:-3}
FS=${FS:-btrfs}

cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
args=("$SIG" --fs "$FS" -n "$N" -r "$REPS" --kernel "$KERNEL" --accel tcg --no-store)

# A first run unpacks the kernel and builds its initramfs; it is not timed.
"$sigbench" run "${args[@]}" >/dev/null 2>&1

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A times
for r in $(seq 1 "$ROUNDS"); do
    for clock in icount host; do
        t0=$(date +%s.%N)
        "$sigbench" run "${args[@]}" --clock "$clock" >/dev/null 2>&1
        t=$(echo "$(date +%s.%N) - $t0" | bc)
        times[$clock]+="$t "
        printf 'round %d: --clock %-6s %6.1f s\n' "$r" "$clock" "$t"
    done
done
mi=$(printf '%s\n' ${times[icount]} | median)
mh=$(printf '%s\n' ${times[host]} | median)
printf '%s -n %s -r %s on %s in a guest of %s: median icount %.1f s, plain TCG %.1f s, ratio %.2f\n' \
    "$SIG" "$N" "$REPS" "$FS" "$(basename "$KERNEL")" "$mi" "$mh" "$(echo "$mi / $mh" | bc -l)"
