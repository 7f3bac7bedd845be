#!/usr/bin/env bash
# `sigbench site` over a store of RUNS runs (one run of 3 repetitions per label, the
# real document of a tmpfs run with its kernel-wide rows, a +10 % step in the middle and
# the change watch finds there, with its report): the site's time, peak memory (GNU time)
# and its largest page. Targets (issue 38): 1,000 runs in < 10 s, every page < 1 MB.
#
#   bash bench/site.sh                 # 1 000 runs
#   RUNS=5000 bash bench/site.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1000}
cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /var/tmp/sigbench-site.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
"$sigbench" run --fs tmpfs -n 5 --dir a -r 3 --no-store --json "$work/one.json" >/dev/null 2>&1
python3 - "$work" "$RUNS" <<'PY'
import datetime, json, sys
start = datetime.datetime(2026, 1, 1)
work, n = sys.argv[1], int(sys.argv[2])
base = json.load(open(f"{work}/one.json"))
runs = []
for k in range(n):
    d = json.loads(json.dumps(base))
    d["id"] = f"site-{k}"
    d["label"] = f"nightly-{k:05d}"
    d["started_at"] = (start + datetime.timedelta(hours=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
    scale = 1.1 if k >= n // 2 else 1.0
    for i, c in enumerate(d["cases"]):
        c["wall_ns"] = int((1_000_000 + 7_000 * ((k * 7 + i) % 5)) * scale)
    runs.append(d)
json.dump({"schema": "sigbench.export", "version": 1, "runs": runs}, open(f"{work}/all.json", "w"))
PY
"$sigbench" import "$work/all.json" --db "$work/s.db" >/dev/null
"$sigbench" watch --db "$work/s.db" --order time --series-glob 'nightly-*' \
    --report-dir "$work/reports" >/dev/null 2>&1 || true
/usr/bin/time -f "site over $RUNS runs: %e s, peak RSS %M KiB" \
    "$sigbench" site -o "$work/site" --db "$work/s.db" >/dev/null 2>"$work/err"
tail -1 "$work/err"
echo "pages: $(ls "$work/site"/*.html | wc -l); largest: $(ls -S "$work/site"/*.html | head -1 | xargs stat -c '%s bytes (%n)' | sed "s|$work/||")"
