#!/usr/bin/env bash
# `watch --series-glob` over a store of LABELS labels (one run of 3 repetitions each, a
# +10 % step in the middle): the change-point search's time and peak memory (GNU time).
# Series longer than 400 kernels are searched in windows, so both grow linearly.
#
#   bash bench/changepoint.sh                 # 20 000 labels
#   LABELS=3000 bash bench/changepoint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LABELS=${LABELS:-20000}
cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /var/tmp/sigbench-cp.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$sigbench" run --fs tmpfs -n 5 --dir a -r 3 --no-store --json "$work/one.json" >/dev/null 2>&1
python3 - "$work" "$LABELS" <<'PY'
import datetime, json, sys
start = datetime.datetime(2026, 1, 1)
work, labels = sys.argv[1], int(sys.argv[2])
base = json.load(open(f"{work}/one.json"))
for c in base["cases"]:
    for k in ("vmstat", "slabinfo", "blockstat"):
        c.pop(k, None)
    c["latency"] = []
runs = []
for k in range(labels):
    d = json.loads(json.dumps(base))
    d["id"] = f"cp-{k}"
    d["label"] = f"nightly-{k:06d}"
    d["started_at"] = (start + datetime.timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
    scale = 1.1 if k >= labels // 2 else 1.0
    for i, c in enumerate(d["cases"]):
        c["wall_ns"] = int((1_000_000 + 7_000 * ((k * 7 + i) % 5)) * scale)
    runs.append(d)
json.dump({"schema": "sigbench.export", "version": 1, "runs": runs}, open(f"{work}/all.json", "w"))
PY
"$sigbench" import "$work/all.json" --db "$work/s.db" >/dev/null
/usr/bin/time -f "watch over $LABELS labels: %e s, peak RSS %M KiB" \
    "$sigbench" watch --db "$work/s.db" --order time --series-glob 'nightly-*' >"$work/out" 2>"$work/err" || true
tail -1 "$work/err"
head -1 "$work/out"
