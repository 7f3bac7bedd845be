#!/usr/bin/env bash
# sigbench's dbench against dbench itself (run as root: `sudo bash bench/dbench.sh`).
#
# Same machine, same fresh filesystem, same loadfile and K: one loop device over a file on
# a private tmpfs, formatted afresh before every run (mkfs.btrfs with MKFS, mounted with
# MOUNT); RUNS runs of each, interleaved (dbench, sigbench, dbench, …). Prints:
#   - each side's throughput per run and the ratio of the medians, sigbench / dbench
#     (goal ≥ 1.0: nothing is parsed inside sigbench's window, no kill() per line);
#   - every operation's count relative to NTCreateX on each side (the mix must agree
#     within 1 %: the same loadfile replayed the same way);
#   - sigbench's peak resident memory with K clients on the full loadfile (goal < 64 MiB).
#
# Variables: K (12), T (10 s), RUNS (5), LOADFILE (/usr/share/dbench/client.txt),
# MKFS ("-O no-holes -R free-space-tree"), MOUNT ("ssd,nodiscard"), SIZE (2G).
set -euo pipefail
cd "$(dirname "$0")/.."

K=${K:-12}
T=${T:-10}
RUNS=${RUNS:-5}
LOADFILE=${LOADFILE:-/usr/share/dbench/client.txt}
MKFS=${MKFS:--O no-holes -R free-space-tree}
MOUNT=${MOUNT:-ssd,nodiscard}
SIZE=${SIZE:-2G}
command -v dbench >/dev/null || { echo "dbench.sh: install dbench (apt-get install dbench)" >&2; exit 1; }

cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /tmp/sigbench-dbench.XXXXXX)
mnt=$work/mnt
mkdir -p "$work/ram" "$mnt"
mount -t tmpfs -o "size=$SIZE" tmpfs "$work/ram"
truncate -s "$SIZE" "$work/ram/disk"
dev=$(losetup -f --show "$work/ram/disk")
cleanup() {
    umount "$mnt" 2>/dev/null || true
    losetup -d "$dev" 2>/dev/null || true
    umount "$work/ram" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Labelled `sigbench`, so that sigbench takes the device as its own scratch device.
fresh() { wipefs -aq "$dev"; mkfs.btrfs -q -f -L sigbench $MKFS "$dev" >/dev/null; }

# dbench: the last line's throughput; its table kept for the mix.
run_dbench() {
    fresh
    mount -o "$MOUNT" "$dev" "$mnt"
    mkdir "$mnt/dbench"
    dbench -D "$mnt/dbench" -c "$LOADFILE" -t "$T" "$K" > "$work/dbench-$1.txt"
    umount "$mnt"
    awk '/^Throughput/ { print $2 }' "$work/dbench-$1.txt"
}

run_sigbench() {
    fresh
    "$sigbench" run dbench --loadfile "$LOADFILE" --clients "$K" --time "$T" \
        --device "$dev" --mkfs-opts "$MKFS" --mount-opts "$MOUNT" --no-default-probes \
        --no-store --json "$work/sigbench-$1.json" > "$work/sigbench-$1.txt" 2>&1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["cases"][0]["throughput"]["mb_per_s"])' \
        "$work/sigbench-$1.json"
}

declare -a db sb
for i in $(seq 1 "$RUNS"); do
    a=$(run_dbench "$i"); b=$(run_sigbench "$i")
    db+=("$a"); sb+=("$b")
    printf 'run %d: dbench %8.2f MB/s   sigbench %8.2f MB/s\n' "$i" "$a" "$b"
done

python3 - "$work" "$RUNS" <<'EOF'
import json, statistics, sys, re
work, runs = sys.argv[1], int(sys.argv[2])
db, sb, rss = [], [], []
mix_db, mix_sb = {}, {}
for i in range(1, runs + 1):
    t = open(f"{work}/dbench-{i}.txt").read()
    db.append(float(re.search(r"^Throughput ([0-9.e+]+)", t, re.M).group(1)))
    for m in re.finditer(r"^ (\w+)\s+(\d+)\s+[0-9.]+\s+[0-9.]+$", t, re.M):
        mix_db[m.group(1)] = mix_db.get(m.group(1), 0) + int(m.group(2))
    d = json.load(open(f"{work}/sigbench-{i}.json"))
    c = d["cases"][0]
    sb.append(c["throughput"]["mb_per_s"])
    rss.append(d["peak_rss_kib"])
    for o in c["operations"]:
        mix_sb[o["syscall"]] = mix_sb.get(o["syscall"], 0) + o["count"]
print()
print(f"throughput, median of {runs}: dbench {statistics.median(db):.2f} MB/s, "
      f"sigbench {statistics.median(sb):.2f} MB/s, ratio {statistics.median(sb) / statistics.median(db):.3f}")
print(f"  spread (max/min - 1): dbench {100 * (max(db) / min(db) - 1):.1f} %, sigbench {100 * (max(sb) / min(sb) - 1):.1f} %")
print("operation mix, count relative to NTCreateX (summed over the runs):")
print(f"  {'operation':<10} {'dbench':>9} {'sigbench':>9} {'diff':>8}")
worst = 0.0
for op in mix_db:
    a = mix_db[op] / mix_db["NTCreateX"]
    b = mix_sb.get(op, 0) / mix_sb["NTCreateX"]
    diff = (b / a - 1) * 100 if a else float("nan")
    if mix_db[op] >= 1000:  # ops too rare for 1 % to mean anything are shown, not judged
        worst = max(worst, abs(diff))
    print(f"  {op:<10} {a:9.4f} {b:9.4f} {diff:+7.2f}%")
print(f"  largest difference among operations with at least 1000 counts: {worst:.2f} %")
print(f"sigbench peak RSS: {max(rss) / 1024:.1f} MiB ({len(rss)} runs of {c.get('clients', 1)} clients)")
EOF
