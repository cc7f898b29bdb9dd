#!/bin/busybox sh
# The host's /init for `./qemu-run.sh --guest qemu`, on Svelt and on Linux alike: mounts what
# Debian's QEMU looks at (/proc, /sys, /dev with /dev/kvm, /tmp), runs qemu-system-aarch64 with
# the arguments of /etc/qemu-args (one per line; the first line is a wrapper command such as
# `strace -f`, or empty), prints `svelt-qemu: exit status N` with QEMU's status and powers the
# machine off.
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev
$bb mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1

wrap=
first=1
set --
while IFS= read -r arg; do
    if [ "$first" = 1 ]; then
        wrap=$arg
        first=0
    else
        set -- "$@" "$arg"
    fi
done </etc/qemu-args

# shellcheck disable=SC2086 # the wrapper is words
$wrap /usr/bin/qemu-system-aarch64 "$@"
echo "svelt-qemu: exit status $?"
$bb sync
$bb poweroff -f
