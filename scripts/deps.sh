#!/usr/bin/env bash
# Install what sigbench needs on Debian/Ubuntu, only what is missing: the mkfs tools of
# the filesystems it tests, blkid/losetup, strace (for recording signatures), rpm (the
# recorder's tests build and upgrade real packages), QEMU, busybox, kmod (depmod), xz and
# zstd (to boot other kernels with `run --kernel`), bsdtar (libarchive-tools: rpm and Arch
# kernel packages), cpio (checks initramfs archives),
# chromium and a font (the report test renders the HTML report headless), and the C
# compiler, bc and GNU time the benchmark uses; git, make, flex, bison, libelf-dev and
# Debian's linux-source-6.1 (`bisect --tree` builds kernels; its test bisects a real tree);
# PostgreSQL, Slurm and munge (the team-scale store and `submit --slurm`, tested against
# throwaway servers). Checks for a Rust toolchain new enough
# for the crate (edition 2024).
set -euo pipefail

packages=(btrfs-progs xfsprogs dbench e2fsprogs util-linux strace rpm qemu-system-x86 busybox-static kmod xz-utils zstd libarchive-tools cpio chromium fonts-dejavu-core gcc libc6-dev bc time git make flex bison libelf-dev linux-source-6.1 postgresql slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: missing ${missing[*]}; run as root (sudo make ...) to install them" >&2
        exit 1
    fi
    echo "deps: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cargo=$(scripts/cargo.sh)
version=$("$cargo" --version | awk '{print $2}')
if [ "$(printf '%s\n1.88.0\n' "$version" | sort -V | head -1)" != "1.88.0" ]; then
    echo "deps: $cargo is $version; sigbench needs Rust >= 1.88 (https://rustup.rs)" >&2
    exit 1
fi
