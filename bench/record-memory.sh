#!/usr/bin/env bash
# sigbench record's peak memory on a large trace whose calls are mostly outside the tree
# (a package manager's trace: libraries, locales, its database), as a stream should keep
# only what it records. Prints the trace's size and the peak RSS (GNU time).
#
#   bash bench/record-memory.sh                   # 2 000 000 lines (~260 MB)
#   LINES=16000000 bash bench/record-memory.sh    # ~2 GB (goal: < 256 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${LINES:-2000000}
FILES=${FILES:-1000}
cargo build --release --quiet
sigbench=$PWD/target/x86_64-unknown-linux-gnu/release/sigbench
work=$(mktemp -d /var/tmp/sigbench-rec.XXXXXX)
trap 'rm -rf "$work"' EXIT
# FILES files replaced in /srv/tree (rpm's rename → unlink → create), the rest of the
# lines opens and stats of files elsewhere.
awk -v lines="$LINES" -v files="$FILES" 'BEGIN {
    noise = lines - 4 * files
    for (i = 0; i < noise; i++) {
        if (i % 2) printf "4242 12:00:00.%06d newfstatat(AT_FDCWD</>, \"/usr/lib/x86_64-linux-gnu/lib%d.so\", {st_mode=S_IFREG|0644, st_size=%d, ...}, 0) = 0 <0.000004>\n", i % 1000000, i % 5000, i
        else   printf "4242 12:00:00.%06d openat(AT_FDCWD</>, \"/usr/share/locale/l%d/LC_MESSAGES/rpm.mo\", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000006>\n", i % 1000000, i % 300
        if (i % (noise / files + 1) == 0 && f < files) {
            printf "4242 12:00:01.000000 renameat2(AT_FDCWD</srv/tree>, \"f%d\", AT_FDCWD</srv/tree>, \"f%d-RPMDELETE\", RENAME_NOREPLACE) = 0 <0.000020>\n", f, f
            printf "4242 12:00:01.000000 unlink(\"/srv/tree/f%d-RPMDELETE\") = 0 <0.000020>\n", f
            printf "4242 12:00:01.000000 openat(AT_FDCWD</srv/tree>, \"f%d\", O_WRONLY|O_CREAT|O_EXCL|O_TRUNC, 0666) = 7</srv/tree/f%d> <0.000020>\n", f, f
            printf "4242 12:00:01.000000 close(7</srv/tree/f%d>) = 0 <0.000002>\n", f
            f++
        }
    }
}' > "$work/t.trace"
size=$(stat -c %s "$work/t.trace")
/usr/bin/time -f '%M %e' -o "$work/time" "$sigbench" record "$work/t.trace" -o "$work/t.toml" >/dev/null
read -r kib secs < "$work/time"
printf 'record: %d lines, %d MB trace: peak RSS %d MiB, %.1f s; %s\n' "$(wc -l < "$work/t.trace")" $((size / 1000000)) $((kib / 1024)) "$secs" \
    "$(grep -c 'op = ' "$work/t.toml") steps recorded"
