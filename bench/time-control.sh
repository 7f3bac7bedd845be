#!/usr/bin/env bash
# Does a guest's clock follow a QEMU plugin that owns the virtual clock (QEMU >= 9.1's
# time control)? Boots KERNEL (a bzImage) twice with bench/time-control-plugin.c advancing
# the clock 1 ns per instruction, and twice under -icount shift=0, each running
# bench/time-control-guest.c as init, and prints the guest's timings (docs/statistics.md,
# "Guest time that follows the model"). Needs QEMU 10: scripts/qemu10.sh.
#   bench/time-control.sh /path/to/vmlinuz
set -euo pipefail
kernel=$1
qemu=${SIGBENCH_QEMU:-/opt/sigbench/qemu-10/qemu-system-x86_64}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -shared -fPIC -o "$work/tc.so" "$here/time-control-plugin.c"
gcc -O2 -static -o "$work/init" "$here/time-control-guest.c"
(cd "$work" && echo init | cpio -o -H newc > init.cpio 2>/dev/null)
boot() {
    "$qemu" -accel tcg,thread=single "$@" -rtc base=2020-01-01T00:00:00,clock=vm \
        -cpu max,-rdrand,-rdseed -smp 1 -m 512 -nodefaults -no-reboot -display none \
        -monitor none -kernel "$kernel" -initrd "$work/init.cpio" \
        -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init" -serial "file:$work/log"
    grep '^rep ' "$work/log"
}
for i in 1 2; do echo "plugin time control, boot $i:"; boot -plugin "$work/tc.so"; done
for i in 1 2; do echo "icount, boot $i:"; boot -icount shift=0,sleep=off; done
