#!/usr/bin/env bash
# Write two signatures of one name for measuring the judge's power (bench/aa.sh SIGB=…):
# DIR/a.toml is s3e test 3, DIR/b.toml the same with five more open(O_RDONLY)+close per file
# — about 20 % more time on btrfs (measured: +17 % with four). Usage: bench/slower.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?give a directory}
mkdir -p "$dir"
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
"$sigbench" show test3 | sed -e 's/^name = "s3e-test3"/name = "slower"/' -e '/^aliases/d' > "$dir/a.toml"
extra='  { op = "openat", path = "{name}", flags = "O_RDONLY", slot = "x" },\n  { op = "close", slot = "x" },'
awk -v extra="$extra" '/\{ op = "close", slot = "new" \},/ { print; for (i = 0; i < 5; i++) print extra; next } { print }' "$dir/a.toml" > "$dir/b.toml"
"$sigbench" validate "$dir/b.toml" >/dev/null
echo "$dir/a.toml $dir/b.toml"
