#!/usr/bin/env bash
# Usage: linux-source-tree.sh DIR — makes DIR (new) a git tree of Debian's linux-source-6.1:
# the unpacked source as one commit, tracked as upstream's tree is, so that
# `sigbench run --kernel DIR+fix.patch` and `bisect --tree` can build from it (about two
# minutes: unpack, one commit of the whole tree). Used by bench/reference-001.sh and by
# the tree tests' history (tests/data/kernel-tree.sh).
set -euo pipefail
dir=$1
src=/usr/src/linux-source-6.1.tar.xz
[ -f "$src" ] || { echo "linux-source-tree: $src is missing (apt-get install linux-source-6.1)" >&2; exit 1; }
[ ! -e "$dir" ] || { echo "linux-source-tree: $dir exists; give a new directory" >&2; exit 1; }
mkdir -p "$dir"
tar -xJf "$src" -C "$dir" --strip-components=1
cd "$dir"
git init -q
git config user.name "sigbench"
git config user.email "sigbench@localhost"
git config gc.auto 0
# Debian's .gitignore ignores everything at the top level (its packaging repository holds
# only debian/): drop that stanza so the tree is tracked as upstream's is.
sed -i '/^# Debian packaging/,$d' .gitignore
git add -A
[ "$(git ls-files | wc -l)" -gt 50000 ] || { echo "linux-source-tree: too few files tracked in $dir" >&2; exit 1; }
git commit -q -m "linux-source-6.1 (Debian $(dpkg-query -W -f='${Version}' linux-source-6.1))"
