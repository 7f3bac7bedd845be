#!/usr/bin/env bash
# sigbench's speed and memory targets, measured (run as root: `sudo make bench`).
#
# 1. Executor overhead: the timed window of `sigbench run` (s3e test 3, btrfs, N=1000,
#    loop ramdisk) against bench/test3.c issuing the same syscalls on the same kind of
#    filesystem, alternating, RUNS times each. Prints both medians and their ratio
#    (goal: <= 1.05).
# 2. Memory: peak RSS of `sigbench run` at N=1 000 000 (goal: < 64 MiB, flat in N).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-21}
N=${N:-1000}
BIG_N=${BIG_N:-1000000}
SIZE_MB=256

cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /tmp/sigbench-bench.XXXXXX)
gcc -O2 -Wall -o "$work/test3" bench/test3.c

loopdev=""
cleanup() {
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null || true
    mountpoint -q "$work/ram" && umount "$work/ram"
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ram" "$work/mnt"
mount -t tmpfs -o size=$((SIZE_MB + 16))m bench-ram "$work/ram"

# The same testbed sigbench builds: a loop device over a file on a private tmpfs,
# fresh btrfs, one plain directory.
c_once() {
    truncate -s ${SIZE_MB}M "$work/ram/img"
    loopdev=$(losetup -f --show "$work/ram/img")
    mkfs.btrfs -f -q "$loopdev" >/dev/null
    mount "$loopdev" "$work/mnt"
    mkdir "$work/mnt/d"
    "$work/test3" "$work/mnt/d" "$N"
    umount "$work/mnt"
    losetup -d "$loopdev"; loopdev=""
    rm -f "$work/ram/img"
}

sigbench_once() {
    "$sigbench" run --dir d -n "$N" --no-default-probes --json - 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["cases"][0]["wall_ns"])'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "executor overhead: s3e test 3, btrfs on a loop ramdisk, N=$N, $RUNS runs each (alternating)"
: > "$work/c.txt"; : > "$work/s.txt"
# Let the previous run's teardown (unmount, loop and tmpfs release, kernel workers)
# finish before the next one, so neither side pays for the other's background work.
settle() { sync; sleep 1; }
for i in $(seq "$RUNS"); do
    settle; c_once >> "$work/c.txt"
    settle; sigbench_once >> "$work/s.txt"
done
c_med=$(median < "$work/c.txt")
s_med=$(median < "$work/s.txt")
printf '  C reference     median %8.2f ms   (runs: %s)\n' "$(echo "$c_med / 1000000" | bc -l)" "$(awk '{printf "%.1f ", $1/1e6}' "$work/c.txt")"
printf '  sigbench        median %8.2f ms   (runs: %s)\n' "$(echo "$s_med / 1000000" | bc -l)" "$(awk '{printf "%.1f ", $1/1e6}' "$work/s.txt")"
printf '  ratio sigbench/C = %.3f   (goal <= 1.05; ratio of the fastest runs: %.3f)\n' \
    "$(echo "$s_med / $c_med" | bc -l)" "$(echo "$(sort -n "$work/s.txt" | head -1) / $(sort -n "$work/c.txt" | head -1)" | bc -l)"

echo
echo "memory: s3e test 3, btrfs, N=$BIG_N"
start=$(date +%s)
/usr/bin/time -f '%M' -o "$work/rss" "$sigbench" run --dir d -n "$BIG_N" --json "$work/big.json" >/dev/null 2>"$work/big.err" ||
    { cat "$work/big.err"; exit 1; }
rss_kib=$(tail -1 "$work/rss")
evictions=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["cases"][0]; print([x.get("value") for x in c["counters"] if x["name"]=="inode_evictions"][0], round(c["wall_ns"]/1e9,1))' "$work/big.json")
printf '  peak RSS %.1f MiB (goal < 64 MiB), %s s total; inode_evictions and timed seconds: %s\n' \
    "$(echo "$rss_kib / 1024" | bc -l)" "$(( $(date +%s) - start ))" "$evictions"
