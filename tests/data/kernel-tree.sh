#!/usr/bin/env bash
# The kernel git tree the tree-bisect tests bisect: Debian's linux-source-6.1 committed as a
# base (tag sigbench-good), then twelve commits (the last tagged sigbench-bad):
#   c1 Documentation   c2 fs/libfs comment
#   c3 mm/shmem: a short arithmetic loop in shmem_unlink — a small slowdown (a few per
#      cent more instructions in every tmpfs unlink; no delay, no sleep)
#   c4 fs/dcache comment (tag sigbench-loop)
#   c5 Documentation   c6 fs/inode comment   c7 fs/namei comment
#   c8 mm/shmem: does not build (an undeclared identifier)
#   c9 mm/shmem: builds again
#   c10 mm/shmem: a busy delay in shmem_unlink — the large slowdown (every unlink on tmpfs)
#   c11 init comment   c12 Documentation
# and on a branch from the base, tag sigbench-cold: a dozen reads of cold memory in
# shmem_unlink (the cost model's test).
# Between sigbench-good and sigbench-loop the small slowdown c3 is the first bad commit
# (git bisect visits c2, then c3). Between sigbench-loop and sigbench-bad `git bisect` picks
# c8 first (8 candidates), so the broken commit is always visited and must be skipped; c9
# (good) sits between it and the slow c10, so the answer is still exact.
#
# Usage: kernel-tree.sh DIR — makes DIR once (about 2 minutes: unpack, one commit of the
# whole tree) and afterwards only checks it; a tree made by another version of this script
# is made again. Build products (.config, *.o, bzImage) are left alone, so kernels built in
# DIR by an earlier test run are rebuilt incrementally.
set -euo pipefail
dir=$1
base=$(dirname "$0")/../../bench/linux-source-tree.sh
version=$(cat "$0" "$base" | sha256sum | cut -c1-16)
if [ -f "$dir/.git/sigbench-tree" ] && [ "$(cat "$dir/.git/sigbench-tree")" = "$version" ]; then
    git -C "$dir" bisect reset >/dev/null 2>&1 || true
    git -C "$dir" checkout -q -f sigbench-bad
    exit 0
fi
rm -rf "$dir" "$dir.partial"
bash "$base" "$dir.partial"
cd "$dir.partial"
git config user.name "sigbench test"
git tag sigbench-good
commit() { git commit -q -a -m "$1"; }
comment() {
    sed -i '0,/^#include/s//\/* sigbench test history: a comment. *\/\n#include/' "$1"
    commit "$2"
}
# insert LINE after the first line of shmem_unlink's body
in_unlink() {
    awk -v line="$1" '
        /^static int shmem_unlink\(/ { in_fn = 1 }
        { print }
        in_fn && /^\tstruct inode \*inode = d_inode\(dentry\);$/ { print ""; print line; in_fn = 0 }
    ' mm/shmem.c > mm/shmem.c.new
    mv mm/shmem.c.new mm/shmem.c
    grep -qF "$1" mm/shmem.c
}
echo "A note for sigbench's test history." >> Documentation/filesystems/tmpfs.rst
commit "Documentation: tmpfs: a note"
comment fs/libfs.c "fs/libfs: a comment"
in_unlink $'\t{ unsigned long x = 0; int i; for (i = 0; i < 100; i++) { x = x * 31 + i; OPTIMIZER_HIDE_VAR(x); } }\t/* sigbench test history: the small slowdown */'
commit "mm/shmem: count to 100 in every unlink"
comment fs/dcache.c "fs/dcache: a comment"
git tag sigbench-loop
echo "Another note for sigbench's test history." >> Documentation/filesystems/index.rst
commit "Documentation: filesystems: a note"
comment fs/inode.c "fs/inode: a comment"
comment fs/namei.c "fs/namei: a comment"
in_unlink $'\tsigbench_no_such_function();'
commit "mm/shmem: call a function that does not exist (does not build)"
git show sigbench-loop:mm/shmem.c > mm/shmem.c
commit "mm/shmem: build again"
grep -q '^#include <linux/delay.h>' mm/shmem.c || sed -i '0,/^#include <linux\/fs.h>/s//#include <linux\/delay.h>\n&/' mm/shmem.c
in_unlink $'\tudelay(300);\t/* sigbench test history: the slowdown */'
commit "mm/shmem: wait 300 us in every unlink"
comment init/version.c "init/version: a comment"
echo "Another note for sigbench's test history." >> Documentation/filesystems/tmpfs.rst
commit "Documentation: tmpfs: another note"
git tag sigbench-bad
# Beside the history, from the base: a dozen reads of cold memory in every tmpfs unlink
# (a 64 MiB array read 4099 lines apart, so no line is read twice in a million reads) —
# a few instructions, a dozen cache misses (tag sigbench-cold: the cost model's test).
git checkout -q -b sigbench-cold-branch sigbench-good
in_unlink $'\t{ static char sigbench_cold[64 << 20]; static unsigned long sigbench_at; unsigned long s = 0; int i; for (i = 0; i < 12; i++) { sigbench_at = (sigbench_at + 4099 * 64) & ((64 << 20) - 1); s += READ_ONCE(sigbench_cold[sigbench_at]); } OPTIMIZER_HIDE_VAR(s); }\t/* sigbench test history: cold reads */'
commit "mm/shmem: read a dozen cold cache lines in every unlink"
git tag sigbench-cold
git checkout -q sigbench-bad
echo "$version" > .git/sigbench-tree
cd /
mv "$dir.partial" "$dir"
