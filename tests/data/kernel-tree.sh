#!/usr/bin/env bash
# The kernel git tree the tree-bisect tests bisect: Debian's linux-source-6.1 committed as a
# base (tag sigbench-good), then eight commits (the last tagged sigbench-bad):
#   c1 Documentation   c2 fs/libfs comment   c3 fs/namei comment
#   c4 mm/shmem: does not build (an undeclared identifier)
#   c5 mm/shmem: builds again
#   c6 mm/shmem: a busy delay in shmem_unlink — the slowdown (every unlink on tmpfs)
#   c7 init comment   c8 Documentation
# `git bisect` starting from these ends picks c4 first (8 candidates), so the broken commit
# is always visited and must be skipped; c5 (good) sits between it and the slow c6, so the
# answer is still exact.
#
# Usage: kernel-tree.sh DIR — makes DIR once (about 2 minutes: unpack, one commit of the
# whole tree) and afterwards only checks it; a tree made by another version of this script
# is made again. Build products (.config, *.o, bzImage) are left alone, so kernels built in
# DIR by an earlier test run are rebuilt incrementally.
set -euo pipefail
dir=$1
version=$(sha256sum "$0" | cut -c1-16)
if [ -f "$dir/.git/sigbench-tree" ] && [ "$(cat "$dir/.git/sigbench-tree")" = "$version" ]; then
    git -C "$dir" bisect reset >/dev/null 2>&1 || true
    git -C "$dir" checkout -q -f sigbench-bad
    exit 0
fi
src=/usr/src/linux-source-6.1.tar.xz
[ -f "$src" ] || { echo "kernel-tree: $src is missing (apt-get install linux-source-6.1)" >&2; exit 1; }
rm -rf "$dir" "$dir.partial"
mkdir -p "$dir.partial"
tar -xJf "$src" -C "$dir.partial" --strip-components=1
cd "$dir.partial"
git init -q
git config user.name "sigbench test"
git config user.email "sigbench@localhost"
git config gc.auto 0
# Debian's .gitignore ignores everything at the top level (its packaging repository holds
# only debian/): drop that stanza so the tree is tracked as upstream's is.
sed -i '/^# Debian packaging/,$d' .gitignore
git add -A
[ "$(git ls-files | wc -l)" -gt 50000 ] || { echo "kernel-tree: too few files tracked" >&2; exit 1; }
git commit -q -m "linux-source-6.1 (Debian $(dpkg-query -W -f='${Version}' linux-source-6.1))"
git tag sigbench-good
commit() { git commit -q -a -m "$1"; }
echo "A note for sigbench's test history." >> Documentation/filesystems/tmpfs.rst
commit "Documentation: tmpfs: a note"
sed -i '0,/^#include/s//\/* sigbench test history: a comment. *\/\n#include/' fs/libfs.c
commit "fs/libfs: a comment"
sed -i '0,/^#include/s//\/* sigbench test history: another comment. *\/\n#include/' fs/namei.c
commit "fs/namei: a comment"
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
in_unlink $'\tsigbench_no_such_function();'
commit "mm/shmem: call a function that does not exist (does not build)"
git show sigbench-good:mm/shmem.c > mm/shmem.c
commit "mm/shmem: build again"
grep -q '^#include <linux/delay.h>' mm/shmem.c || sed -i '0,/^#include <linux\/fs.h>/s//#include <linux\/delay.h>\n&/' mm/shmem.c
in_unlink $'\tudelay(300);\t/* sigbench test history: the slowdown */'
commit "mm/shmem: wait 300 us in every unlink"
sed -i '0,/^#include/s//\/* sigbench test history: a comment. *\/\n#include/' init/version.c
commit "init/version: a comment"
echo "Another note for sigbench's test history." >> Documentation/filesystems/tmpfs.rst
commit "Documentation: tmpfs: another note"
git tag sigbench-bad
echo "$version" > .git/sigbench-tree
cd /
mv "$dir.partial" "$dir"
