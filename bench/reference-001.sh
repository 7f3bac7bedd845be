#!/usr/bin/env bash
# Reference 001's table from source (run as root: `sudo bash bench/reference-001.sh`).
#
# Reference 001 is "btrfs: avoid inode logging during rename and link when possible"
# (0f8ce49821de, 5.17), the last of five patches; its message times a rename test (N empty
# files renamed after an unrelated fsync) before the patchset, after patches 1–4 and after
# all five, and dbench with 12 clients before and after. Debian's linux-source-6.1 has the
# patchset, so this script builds three kernels from it (one git tree, `--kernel
# TREE+PATCH…`) and measures each in a guest:
#   6.1                        the patchset as merged ("after whole patchset")
#   +revert-5of5               5/5 reverted in effect: inode_logged() assumes an inode changed
#                              in this transaction was logged ("after patches 1/5 to 4/5")
#   +revert-5of5+revert-3and4of5
#                              3/5 and 4/5 reverted in effect too: every rename logs the old
#                              directory again, and the unlink half of a rename deletes
#                              from the log ("before patchset")
# Patches 1/5 and 2/5 are refactors (a helper, an argument) and stay. The patches are in
# bench/reference-001/; each hunk says which patch it reverts.
#
# Prints the runs' comparisons; docs/reference-001.md holds the table beside the
# reference's figures. Variables: TREE (the git tree of linux-source-6.1, made once by
# bench/linux-source-tree.sh; /var/cache/sigbench/reference-001/linux), NS
# (1000,2000,5000,10000), R (3), K (12), T (10 s), CPUS (guest CPUs for dbench: 2),
# OUT (the stores, rename.db and dbench.db: /var/cache/sigbench/reference-001), CLOCK
# (icount).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD/bench/reference-001
cache=/var/cache/sigbench/reference-001
TREE=${TREE:-$cache/linux}
NS=${NS:-1000,2000,5000,10000}
R=${R:-3}
K=${K:-12}
T=${T:-10}
CPUS=${CPUS:-2}
OUT=${OUT:-$cache}
CLOCK=${CLOCK:-icount}

# Several guest CPUs under the icount clock need QEMU 10 (Debian's 7.2 hangs bringing up
# the second one): scripts/qemu10.sh unpacks bookworm-backports' beside the system's, and
# sigbench runs such guests on it by itself.
if [ "$CPUS" -gt 1 ] && [ -z "${SIGBENCH_QEMU:-}" ]; then
    bash scripts/qemu10.sh
fi
cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
[ -d "$TREE/.git" ] || { mkdir -p "$(dirname "$TREE")"; bash bench/linux-source-tree.sh "$TREE"; }
mkdir -p "$OUT"

v1="$TREE+$here/revert-5of5.patch"
v2="$v1+$here/revert-3and4of5.patch"
kernels=(--kernel "$TREE" --kernel "$v1" --kernel "$v2")
common=(--fs btrfs --clock "$CLOCK" -r "$R" --interleave)

# The rename test: btrfs-rename-log is the reference's test.sh (N empty files, sync, an
# unrelated 4 KiB file written and fsynced, one more file in testdir, then N renames timed).
"$sigbench" run btrfs-rename-log -n "$NS" --db "$OUT/rename.db" "${common[@]}" "${kernels[@]}"

# dbench as the reference ran it: mkfs.btrfs -O no-holes -R free-space-tree, mount -o ssd,
# 12 clients; T seconds (the reference: 120) on CPUS guest CPUs.
"$sigbench" run dbench --clients "$K" --time "$T" --guest-cpus "$CPUS" \
    --mkfs-opts "-O no-holes -R free-space-tree" --mount-opts ssd \
    --db "$OUT/dbench.db" "${common[@]}" "${kernels[@]}"

# The labels: each kernel's release, with the patches' names for the variants.
release=$(make -s -C "$TREE" kernelversion)
for db in rename dbench; do
    labels=$("$sigbench" runs --db "$OUT/$db.db" | grep -o "$release[^ ]*" | sort -u)
    base=$(echo "$labels" | grep -v '+revert' | head -1)
    one=$(echo "$labels" | grep '+revert-5of5$' | head -1)
    both=$(echo "$labels" | grep '+revert-5of5+revert-3and4of5$' | head -1)
    echo "== $db: before the patchset ($both) -> the whole patchset ($base)"
    "$sigbench" compare "$both" "$base" --db "$OUT/$db.db" --all
    echo "== $db: after patches 1-4 ($one) -> the whole patchset ($base)"
    "$sigbench" compare "$one" "$base" --db "$OUT/$db.db" --all
done
