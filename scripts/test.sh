#!/usr/bin/env bash
# Every test of the workspace (what `make test` runs after fmt and clippy), ordered for a
# machine of two cores. First every unit test and every end-to-end binary one at a time,
# as `cargo test` runs them: many time on the host's clock and take the machine whole.
# Then the two longest binaries side by side: tests/tree.rs (kernel builds, then guests)
# and tests/vm.rs (guests). Their guests time on the icount clock, which the host's load
# cannot move, and one alone leaves a core idle while the other boots or waits; the
# machine lock lets icount guests share the machine (measure::testbed::workspace).
# Exits non-zero when any test failed; tree.rs's output follows vm.rs's.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
together=(tree vm)

$cargo test --workspace --no-run
first=(--lib --bins)
for f in tests/*.rs; do
    name=$(basename "$f" .rs)
    [[ " ${together[*]} " == *" $name "* ]] || first+=(--test "$name")
done
$cargo test --workspace "${first[@]}"
$cargo test --workspace --doc

log=$(mktemp /tmp/sigbench-test-tree.XXXXXX)
trap 'rm -f "$log"' EXIT
started=$SECONDS
$cargo test --test tree >"$log" 2>&1 &
tree=$!
vm=0
$cargo test --test vm || vm=$?
tree_rc=0
wait "$tree" || tree_rc=$?
echo "--- tests/tree.rs (beside tests/vm.rs; both done after $((SECONDS - started)) s)"
cat "$log"
[ "$vm" -eq 0 ] && [ "$tree_rc" -eq 0 ]
