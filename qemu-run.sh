#!/usr/bin/env bash
# Builds Svelt, boots it in QEMU (-M virt) and exits with the run's status.
#
# The kernel reports its status through Arm semihosting (svelt.exit=semihosting on the command
# line), so QEMU's own exit code is the run's: 0 when everything passed, 101 for a kernel bug.
set -euo pipefail

root=$(cd "$(dirname "$0")" && pwd)
target=aarch64-unknown-none-softfloat
target_dir="$root/target/kernel"

usage() {
    cat <<EOF
usage: ./qemu-run.sh [options] [-- extra QEMU arguments]

  --el1 | --el2          entry exception level (default: EL2, -M virt,virtualization=on)
  --smp N                number of CPUs (default 2)
  --sve-max-vq N         largest SVE vector length in quadwords, 1..16 (default 16: 16..256 bytes)
  --no-sme               a CPU without SME
  --sme-max-vl BYTES     largest SME streaming vector length, a power of two 16..256
                         (default: the largest power of two within the SVE maximum, as QEMU
                         aborts under load when SME lengths exceed it)
  --mem SIZE             RAM (QEMU -m syntax, default 1G)
  --gic 2|3              GIC version (default 3)
  --append "ARGS"        extra kernel command-line words (e.g. log=debug, svelt.selftest=fault)
  --gdb                  start QEMU's gdb stub on :1234 and wait for the debugger
  --build-only           build the kernel image and stop
  --no-build             boot the image already built
  --kernel-elf FILE      boot this kernel ELF (cargo's runner passes it)
  -h | --help            this text
EOF
}

el=2 smp=2 vq=16 sme=on sme_max="" mem=1G gic=3 append="" gdb=0 build=1 boot=1 elf=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --el1) el=1 ;;
        --el2) el=2 ;;
        --smp) smp=$2; shift ;;
        --sve-max-vq) vq=$2; shift ;;
        --no-sme) sme=off ;;
        --sme-max-vl) sme_max=$2; shift ;;
        --mem) mem=$2; shift ;;
        --gic) gic=$2; shift ;;
        --append) append="$append $2"; shift ;;
        --gdb) gdb=1 ;;
        --build-only) boot=0 ;;
        --no-build) build=0 ;;
        --kernel-elf) elf=$2; build=0; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "qemu-run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

die() { echo "qemu-run.sh: $*" >&2; exit 2; }
[[ "$smp" =~ ^[0-9]+$ ]] && [ "$smp" -ge 1 ] || die "--smp wants a positive number"
[[ "$vq" =~ ^[0-9]+$ ]] && [ "$vq" -ge 1 ] && [ "$vq" -le 16 ] || die "--sve-max-vq wants 1..16"
[[ "$gic" == 2 || "$gic" == 3 ]] || die "--gic wants 2 or 3"
if [ -z "$sme_max" ]; then
    sme_max=16
    while [ $((sme_max * 2)) -le $((vq * 16)) ] && [ $((sme_max * 2)) -le 256 ]; do sme_max=$((sme_max * 2)); done
fi
case "$sme_max" in 16|32|64|128|256) ;; *) die "--sme-max-vl wants 16, 32, 64, 128 or 256" ;; esac

if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --quiet --release -p svelt-kernel --target "$target" --target-dir "$target_dir")
fi
[ -n "$elf" ] || elf="$target_dir/$target/release/svelt"
[ -f "$elf" ] || die "no kernel at $elf (drop --no-build)"
image="${elf}.img"
if [ "$build" = 1 ] || [ ! -f "$image" ] || [ "$elf" -nt "$image" ]; then
    sysroot=$(rustc --print sysroot)
    host=$(rustc -vV | sed -n 's/^host: //p')
    objcopy="$sysroot/lib/rustlib/$host/bin/llvm-objcopy"
    [ -x "$objcopy" ] || die "llvm-objcopy missing: rustup component add llvm-tools"
    "$objcopy" -O binary "$elf" "$image"
fi
[ "$boot" = 1 ] || exit 0

if ! command -v qemu-system-aarch64 >/dev/null; then
    cmd="apt-get install -y --no-install-recommends qemu-system-arm"
    if [ "$(id -u)" = 0 ]; then
        echo "qemu-run.sh: installing QEMU ($cmd)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive $cmd >&2
    else
        die "qemu-system-aarch64 is missing; install it with: sudo $cmd"
    fi
fi

machine="virt,gic-version=$gic"
[ "$el" = 2 ] && machine="$machine,virtualization=on"
cpu="max,pauth-impdef=on,sve=on,sve-max-vq=$vq"
if [ "$sme" = on ]; then
    cpu="$cpu,sme=on"
    for bits in 128 256 512 1024 2048; do
        if [ $((bits / 8)) -le "$sme_max" ]; then cpu="$cpu,sme$bits=on"; else cpu="$cpu,sme$bits=off"; fi
    done
else
    cpu="$cpu,sme=off"
fi

args=(-M "$machine" -cpu "$cpu" -smp "$smp" -m "$mem"
      -nographic -nodefaults -serial stdio -monitor none -no-reboot
      -semihosting-config enable=on,target=native
      -kernel "$image" -append "svelt.exit=semihosting${append}")
if [ "$gdb" = 1 ]; then
    echo "qemu-run.sh: waiting for gdb: gdb-multiarch $elf -ex 'target remote :1234'" >&2
    args+=(-s -S)
fi
exec qemu-system-aarch64 "${args[@]}" "${extra[@]}"
