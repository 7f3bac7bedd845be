#!/usr/bin/env bash
# Every test of the workspace (what `make test` runs after fmt and clippy), ordered for a
# machine of two cores:
#  1. every unit test and every end-to-end binary that times anything on the host's clock,
#     one at a time as `cargo test` runs them: they take the machine whole;
#  2. the binaries whose guests time on the icount clock, in two lanes side by side —
#     tests/tree.rs (kernel builds, then guests) beside tests/vm.rs then tests/distros.rs.
#     The host's load cannot move an icount time, and each binary alone leaves a core idle
#     while its one guest boots or its one chain waits; the machine lock lets icount guests
#     share the machine (measure::testbed::workspace). vm.rs's tests named `host_time_`
#     judge the host's wall-clock time and are left out of the lane;
#  3. those host-time tests, alone on the machine.
# Every test runs exactly once; exits non-zero when any failed. Options after `--` go to
# every test binary (e.g. scripts/test.sh -- --nocapture).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
[[ "${1:-}" == "--" ]] && shift
lane_a=(tree)
lane_b=(vm distros)
host_time=host_time_

# --workspace everywhere: the build of the whole workspace is the one reused (without it
# cargo unifies the root package's features alone and rebuilds every crate).
$cargo test --workspace --no-run
first=(--lib --bins)
for f in tests/*.rs; do
    name=$(basename "$f" .rs)
    [[ " ${lane_a[*]} ${lane_b[*]} " == *" $name "* ]] || first+=(--test "$name")
done
$cargo test --workspace "${first[@]}" -- "$@"
$cargo test --workspace --doc -- "$@"

tests_of() { local a=(); for t in "$@"; do a+=(--test "$t"); done; echo "${a[@]}"; }
log=$(mktemp /tmp/sigbench-test-lane.XXXXXX)
trap 'rm -f "$log"' EXIT
started=$SECONDS
# shellcheck disable=SC2046
$cargo test --workspace $(tests_of "${lane_a[@]}") -- "$@" >"$log" 2>&1 &
lane=$!
rc=0
# shellcheck disable=SC2046
$cargo test --workspace $(tests_of "${lane_b[@]}") -- --skip "$host_time" "$@" || rc=$?
wait "$lane" || rc=$?
echo "--- ${lane_a[*]} (beside ${lane_b[*]}; both lanes done after $((SECONDS - started)) s)"
cat "$log"
$cargo test --workspace --test vm -- "$host_time" "$@" || rc=$?
exit "$rc"
