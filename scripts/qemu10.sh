#!/usr/bin/env bash
# QEMU 10.0 from bookworm-backports, unpacked beside the system's QEMU (never replacing
# it) into /opt/sigbench/qemu-10, with a wrapper that finds its firmware:
#   SIGBENCH_QEMU=/opt/sigbench/qemu-10/qemu-system-x86_64 sigbench run --kernel K --guest-cpus 2 …
# An icount guest of several CPUs needs it (Debian's QEMU 7.2 hangs bringing up the second
# CPU; docs/statistics.md, "Several guest CPUs"). apt's own configuration is untouched:
# the backports index is read into a directory of this script's own.
set -euo pipefail
dest=/opt/sigbench/qemu-10
# It runs as root, and so does the QEMU it leaves: an install another user could have
# changed (owned by them, or writable by group or others, or under such a directory) is
# never run — refused, and said how to start again.
for d in /opt /opt/sigbench; do
    if [ -e "$d" ] && [ -n "$(find "$d" -maxdepth 0 \( ! -user root -o -perm -0002 -o -perm -0020 \) -print)" ]; then
        echo "qemu10: $d is not root's alone (its owner, or group/other may write): fix it (chown root, chmod go-w) and run this again" >&2
        exit 1
    fi
done
if [ -e "$dest" ]; then
    bad=$(find "$dest" \( ! -user root -o \( ! -type l \( -perm -0002 -o -perm -0020 \) \) \) -print -quit)
    if [ -n "$bad" ]; then
        echo "qemu10: $bad is not root's alone: remove $dest (rm -rf) and run this again" >&2
        exit 1
    fi
fi
[ -x "$dest/qemu-system-x86_64" ] && "$dest/qemu-system-x86_64" --version >/dev/null 2>&1 && exit 0
[ "$(id -u)" -eq 0 ] || { echo "qemu10: run as root" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/debs"
cat > "$work/sources.list" <<LIST
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=-"
          -o "Dir::State::Lists=$work/lists" -o "Debug::NoLocking=1"
          -o "APT::Sandbox::User=root" -qq)
apt-get "${apt_opts[@]}" update
cd "$work/debs"
apt-get "${apt_opts[@]}" download qemu-system-x86/bookworm-backports \
    qemu-system-common/bookworm-backports qemu-system-data/bookworm-backports 2>/dev/null
rm -rf "$dest.partial"
mkdir -p "$dest.partial/root"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$dest.partial/root"; done
cat > "$dest.partial/qemu-system-x86_64" <<WRAP
#!/bin/sh
exec $dest/root/usr/bin/qemu-system-x86_64 -L $dest/root/usr/share/qemu "\$@"
WRAP
chmod +x "$dest.partial/qemu-system-x86_64"
rm -rf "$dest"
mv "$dest.partial" "$dest"
# The wrapper names its final place; check it from there.
"$dest/qemu-system-x86_64" --version | head -1
