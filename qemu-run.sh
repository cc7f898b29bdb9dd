#!/usr/bin/env bash
# Builds Svelt and its userland, packs the initramfs, boots it in QEMU (-M virt) and exits with
# the run's status.
#
# The kernel reports its status through Arm semihosting (svelt.exit=semihosting on the command
# line), so QEMU's own exit code is the run's: 0 when everything passed, 101 for a kernel bug.
# With the default initramfs a failed test also makes the status 1 (a top-level KTAP
# `# Totals:` line with fail>0, or no `svelt-init: exit status 0` line).
#
# --linux boots Debian's arm64 Linux (trixie-backports) with the same initramfs instead: the
# reference the userland tests are checked against. Its status comes from the init's
# `svelt-init: exit status S` line (missing: 1).
#
# --core-dir DIR makes Svelt also write every core file it dumps onto the host, as
# DIR/core.COMM.PID, through Arm semihosting: the kernel gets `svelt.coredump=semihosting
# svelt.coredump_dir=ABS` (ABS: DIR made absolute, created if missing; it may not contain white
# space), so the host paths do not depend on QEMU's working directory. Not with --linux (whose
# cores stay inside the guest).
#
# The QEMU binary is --qemu PATH, else $QEMU, else qemu-system-aarch64 from PATH (installed from
# Debian when missing); PATH may be a wrapper script. --qemu11 takes QEMU 11.1 (SME2, ZT0, GCS)
# from target/qemu11/, fetching it first if needed (tests/qemu11.sh).
#
# --bench boots /bin/bench (user/src/bin/bench.rs) as the first process under
# `-icount shift=0,sleep=off` and prints its table of guest instructions per operation; with
# --linux the same benchmark runs on Linux. Its status comes from `svelt-bench: exit status S`.
# --bench-cases "WORDS" runs only those cases (names, or prefixes ending in *), listed in
# /etc/bench-cases of an archive made for the purpose (target/bench/initramfs.cpio).
# --compare boots the benchmark on Svelt and then on Linux with the same flags (or, with
# --compare-append "ARGS", twice on Svelt, the second time with ARGS on its command line) and
# writes the comparison under target/bench/ (compare.csv, compare.md, vl.png; the tests crate's
# benchcmp makes them, gnuplot draws the plot). --compare-policy "fp=eager ..." compares two FP
# policies of Svelt (svelt.fp, svelt.sve_syscall, svelt.sme_trap): the first run under the
# command line's policy (default, or what --append sets), the second with these words added.
# The benchmark prints the policy each run had (`# svelt-bench: fp policy ...`). With
# --guest linux, --bench runs the benchmark inside the guest instead (its initramfs is the bench
# archive, `rdinit=/bin/bench`), on the host's -icount clock: the guest's own kernel paths plus
# whatever the hypervisor adds; the status needs both `svelt-bench:` and `svelt-vmm:` at 0.
#
# --soak MINUTES boots /bin/soak (user/src/bin/soak.rs) as the first process, with Linux's
# fp-stress and its helpers (built by tests/selftests/build.sh, cached in target/selftests/) in
# /soak/fp of an archive made for the purpose (target/soak/initramfs.cpio): fp-stress and the
# fuzzers of /bin/tests run for MINUTES, then the switch and FP counters are printed. Its status
# comes from `svelt-soak: exit status S`.
#
# --guest linux boots, as the first process, the VMM of user/src/bin/vmm.rs (on Svelt's KVM, or
# on Linux's with --linux), which boots the same Debian Linux Image as a guest with a small
# initramfs whose /init (user/src/bin/guest_init.rs) prints uname, the CPUs and the vector
# lengths it sees, then powers off; --guest-initrd FILE gives the guest another initramfs. The
# guest's console is the run's output; the status comes from `svelt-vmm: exit status S`
# (docs/vmm.md). With --soak MINUTES it is /bin/soak that starts (--guest-vms N) VMMs, each
# guest running the soak archive with /bin/soak as its own first process, beside the host's
# fp-stress; the status is the host soak's. --guest qemu does the same with Debian's
# qemu-system-aarch64 (trixie's qemu-system-arm, unpacked by tests/debian-userland.sh with
# busybox-static) as the VMM, run with -accel kvm -cpu host -M virt,gic-version=3 by
# user/data/qemu-host-init.sh (the host's /init); the status is the guest's last `vmm-guest:`
# or `svelt-init: exit status S` line, or QEMU's own exit status when that is not 0
# (docs/kvm.md).
set -euo pipefail

root=$(cd "$(dirname "$0")" && pwd)
. "$root/tests/debian-apt.sh"
. "$root/tests/qemu11.sh"
. "$root/tests/debian-userland.sh"
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
  --no-fa64              SME without FEAT_SME_FA64 (sme_fa64=off)
  --cpu-opt PROP=VALUE   add a property to the -cpu line (after the ones above, so it wins;
                         repeatable), e.g. --cpu-opt sve384=off
  --qemu PATH            the QEMU to run (default: \$QEMU, else qemu-system-aarch64 on PATH)
  --qemu11               QEMU 11.1 from Debian trixie-backports, cached in target/qemu11/
                         (tests/qemu11.sh fetches it when missing)
  --qemu-version         print the chosen QEMU's version line and stop
  --mem SIZE             RAM (QEMU -m syntax, default 1G)
  --gic 2|3              GIC version (default 3)
  --append "ARGS"        extra kernel command-line words (e.g. log=debug, svelt.selftest=fault)
  --gdb                  start QEMU's gdb stub on :1234 and wait for the debugger
  --build-only           build the kernel image (and the initramfs) and stop
  --no-build             boot the image (and initramfs) already built
  --kernel-elf FILE      boot this kernel ELF (cargo's runner passes it)
  --initrd FILE          boot with this ready-made initramfs (newc cpio, gzip or plain) instead
                         of the userland built here (target/initramfs.cpio.gz)
  --init PATH            run PATH as the first process (adds init=PATH to the command line;
                         rdinit=PATH with --linux)
  --core-dir DIR         also write each core file Svelt dumps to the host, as
                         DIR/core.COMM.PID (semihosting; not with --linux)
  --debian PKG[,PKG...]  boot the userland on top of these Debian arm64 packages (trixie) and
                         their dependencies, unpacked without maintainer scripts and cached in
                         target/debian/ (tests/debian-userland.sh); e.g. --debian bash,coreutils
                         --init /bin/bash
  --no-initrd            boot without an initramfs (the kernel only reports its boot)
  --firmware edk2        boot through UEFI (Debian's qemu-efi-aarch64, QEMU_EFI.fd): the Image
                         starts as an EFI application, with QEMU's device tree (acpi=off)
  --firmware edk2-acpi   the same with ACPI tables and no device tree: the EFI stub describes
                         the machine from ACPI (MADT, GTDT, SPCR, FADT)
  --firmware uboot       boot through U-Boot (Debian's u-boot-qemu, qemu_arm64 build, as -bios;
                         \$UBOOT_BIN overrides /usr/lib/u-boot/qemu_arm64/u-boot.bin): it loads
                         the Image and the initramfs from fw_cfg and starts the Image with booti
  --board ast2700        boot on QEMU's Aspeed AST2700 EVB (-M ast2700a1-evb) instead of virt,
                         with the device tree tests/data/ast2700-evb.dts (compiled with dtc,
                         installed when missing, as root): a 16550 console, GICv3, RAM at
                         16 GiB, Cortex-A35 (no SVE/SME), one CPU online (no PSCI there); the
                         board fixes CPUs, GIC and entry EL (--el/--smp/--sve-max-vq/--gic/
                         SME options are ignored)
  --board raspi4b        QEMU's Raspberry Pi 4B (-M raspi4b) with tests/data/raspi4b.dts: PL011
                         console, GIC-400 (GICv2), four Cortex-A72 (no SVE/SME) started from
                         spin tables, 960 MiB of RAM (the board fixes it: --mem is ignored)
  --build-selfcheck      write target/svelt-selfcheck.img, an Image with the test userland built
                         in (no initrd needed): booted anywhere it runs the whole suite, prints
                         the KTAP report and 'svelt-selfcheck: N passed, F failed, S skipped',
                         and powers off (PSCI); with --no-build the userland already built
  --embed FILE           with --build-selfcheck: build in FILE (an initramfs, newc cpio plain
                         or gzip) instead; its /init runs
  --linux                reference mode: boot Debian's arm64 Linux (the newest
                         linux-binary-*-arm64 in trixie-backports, cached in target/linux/)
                         with the same initramfs and QEMU flags
  --bench                run the benchmarks (/bin/bench as init) under -icount shift=0,sleep=off:
                         deterministic guest-instruction counts per operation (with --linux: on
                         Linux, for comparison; with --guest linux: inside the guest)
  --bench-cases "WORDS"  with --bench: only these cases (names; a word ending in * is a prefix)
  --compare              --bench on Svelt, then on Linux, same flags; one table (Linux, Svelt,
                         ratio) printed and written to target/bench/compare.{csv,md}, and a plot
                         of the vector-length cases, target/bench/vl.png
  --compare-append "ARGS"  --compare between Svelt and Svelt with ARGS on its command line
  --compare-policy "P"   --compare between two FP policies of Svelt: as given by the other flags
                         (the default: fp=lazy sve_syscall=discard sme_trap=lazy), then with P
                         added, e.g. "fp=eager" or "sve_syscall=keep sme_trap=eager" (the
                         svelt. prefix is optional)
  --soak MINUTES         run Linux's fp-stress (FPSIMD, SVE, streaming SVE, ZA, ZT0 tasks on
                         every CPU) for MINUTES with the fuzzers of /bin/tests (fuzz_sigframe,
                         fuzz_regset, fuzz_exec, those present) beside it (/bin/soak as init);
                         prints the context switches and /proc/svelt/fpstat before and after;
                         fails if fp-stress, a fuzzer run or the mismatch counter says so (with
                         --linux: on Linux; builds the selftests with tests/selftests/build.sh)
  --guest linux          boot the VMM (/bin/tests/vmm, user/src/bin/vmm.rs) as the first
                         process; it boots Debian's Linux (the --linux Image) as a KVM guest
                         whose console is the run's output and whose status is the run's
  --guest qemu           the same with Debian's qemu-system-aarch64 (trixie) as the VMM:
                         -accel kvm -cpu host -M virt,gic-version=3 -nodefaults, the guest's
                         PL011 on QEMU's stdio; --debian PKGS adds packages to the host's tree
                         (e.g. strace: --guest-wrap "strace -f" runs QEMU under it)
  --guest-wrap "CMD"     with --guest qemu: run QEMU under CMD (a program of the host's tree)
  --guest-machine M      with --guest qemu: QEMU's -M (default virt,gic-version=3; e.g.
                         virt,gic-version=3,its=off for a kernel without an in-kernel ITS)
  --guest-smp N          the guest's vCPUs (default 1)
  --guest-mem MIB        the guest's RAM in MiB (default 256)
  --guest-sve-vls LIST   the guest's SVE vector lengths in bytes, e.g. 16,32,64 (KVM takes
                         exactly the host's lengths up to the largest; default: all of them)
  --guest-sme-vls LIST   the guest's SME (streaming) lengths in bytes, e.g. 16,32: needs a kernel
                         that offers guests SME (KVM capability 252: Svelt; not Linux 7.3;
                         not with --guest qemu)
  --guest-hide LIST      SME features the guest does not see: fa64, sme2 (with --guest-sme-vls)
  --guest-initrd FILE    the guest's initramfs (its /init runs; default: a small one whose init
                         prints what the guest sees and powers off)
  --guest-append "ARGS"  more words for the guest's command line
  --guest-vms N          with --soak: /bin/soak starts N VMMs whose guests each run the soak
                         (fp-stress and the fuzzers, rdinit=/bin/soak) beside the host's, and
                         fails unless every guest passes and, on Svelt, /proc/svelt/kvm shows
                         every VM, VMID and stage-2 page given back (default 1); the LISTs of
                         --guest-sve-vls, --guest-sme-vls and --guest-hide may then hold one
                         list per VM separated by '/', e.g. --guest-sme-vls 16,32/64
  -h | --help            this text
EOF
}

el=2 smp=2 vq=16 sme=on sme_max="" mem=1G gic=3 append="" gdb=0 build=1 boot=1 elf=""
initrd="" init_path="" debian="" no_initrd=0 linux=0 bench=0 core_dir="" fa64=on qemu=${QEMU:-} qemu11=0
show_version=0 bench_cases="" compare=0 compare_append="" compare_policy="" firmware="" selfcheck=0 embed=""
board="" soak=""
guest="" guest_smp=1 guest_mem=256 guest_sve_vls="" guest_sme_vls="" guest_hide="" guest_initrd="" guest_append="" guest_vms=1
guest_wrap="" guest_machine=virt,gic-version=3
extra=() cpu_opts=()
# What --compare passes on to each of its two runs: everything but the comparison options.
pass_args=()
skip_next=0
for a in "$@"; do
    if [ "$skip_next" = 1 ]; then skip_next=0; continue; fi
    case "$a" in
        --compare|--linux) ;;
        --compare-append|--compare-policy) skip_next=1 ;;
        *) pass_args+=("$a") ;;
    esac
done
while [ $# -gt 0 ]; do
    case "$1" in
        --el1) el=1 ;;
        --el2) el=2 ;;
        --smp) smp=$2; shift ;;
        --sve-max-vq) vq=$2; shift ;;
        --no-sme) sme=off ;;
        --sme-max-vl) sme_max=$2; shift ;;
        --no-fa64) fa64=off ;;
        --cpu-opt) cpu_opts+=("$2"); shift ;;
        --qemu) qemu=$2; qemu11=0; shift ;;
        --qemu11) qemu11=1 ;;
        --qemu-version) show_version=1 ;;
        --mem) mem=$2; shift ;;
        --gic) gic=$2; shift ;;
        --append) append="$append $2"; shift ;;
        --gdb) gdb=1 ;;
        --build-only) boot=0 ;;
        --no-build) build=0 ;;
        --kernel-elf) elf=$2; build=0; shift ;;
        --initrd) initrd=$2; shift ;;
        --init) init_path=$2; shift ;;
        --debian) debian=$2; shift ;;
        --core-dir) core_dir=$2; shift ;;
        --no-initrd) no_initrd=1 ;;
        --firmware) firmware=$2; shift ;;
        --board) board=$2; shift ;;
        --build-selfcheck) selfcheck=1 ;;
        --embed) embed=$2; shift ;;
        --linux) linux=1 ;;
        --bench) bench=1 ;;
        --soak) soak=$2; shift ;;
        --guest) guest=$2; shift ;;
        --guest-smp) guest_smp=$2; shift ;;
        --guest-mem) guest_mem=$2; shift ;;
        --guest-sve-vls) guest_sve_vls=$2; shift ;;
        --guest-sme-vls) guest_sme_vls=$2; shift ;;
        --guest-hide) guest_hide=$2; shift ;;
        --guest-initrd) guest_initrd=$2; shift ;;
        --guest-append) guest_append=$2; shift ;;
        --guest-vms) guest_vms=$2; shift ;;
        --guest-wrap) guest_wrap=$2; shift ;;
        --guest-machine) guest_machine=$2; shift ;;
        --bench-cases) bench=1; bench_cases=$2; shift ;;
        --compare) bench=1; compare=1 ;;
        --compare-append) bench=1; compare=1; compare_append=$2; shift ;;
        --compare-policy)
            bench=1 compare=1 compare_policy=""
            for w in $2; do
                case "$w" in svelt.*) ;; *) w="svelt.$w" ;; esac
                compare_policy="$compare_policy $w"
            done
            compare_append=${compare_policy# }
            shift ;;
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
if [ -n "$core_dir" ]; then
    [ "$linux" = 0 ] || die "--core-dir is for Svelt (Linux keeps its cores in the guest)"
    mkdir -p "$core_dir" || die "cannot create $core_dir"
    core_dir=$(cd "$core_dir" && pwd)
    [[ "$core_dir" =~ [[:space:]] ]] && die "--core-dir: no white space in the path, please"
    append="$append svelt.coredump=semihosting svelt.coredump_dir=$core_dir"
fi
[ "$sme" = off ] && [ "$fa64" = off ] && die "--no-fa64 needs SME (drop --no-sme)"
for o in "${cpu_opts[@]}"; do
    [[ "$o" =~ ^[A-Za-z0-9_-]+=[^,]+$ ]] || die "--cpu-opt wants PROP=VALUE (one property, no commas): $o"
done
case "$firmware" in
    ""|none) firmware="" ;;
    edk2|edk2-acpi) ;;
    uboot)
        [ "$gdb" = 0 ] || die "--gdb stops QEMU before the firmware: boot with -kernel to debug" ;;
    *) die "--firmware wants edk2, edk2-acpi or uboot (or none)" ;;
esac
[ -n "$firmware" ] && [ "$linux" = 1 ] && die "--firmware is for Svelt (drop --linux)"
case "$board" in
    ""|virt) board="" ;;
    ast2700|raspi4b)
        [ "$linux" = 0 ] || die "--board is for Svelt (drop --linux)"
        [ -z "$firmware" ] || die "--board loads the kernel itself (drop --firmware)" ;;
    *) die "--board wants ast2700 or raspi4b (or virt, the default)" ;;
esac
[ "$no_initrd" = 1 ] && [ -n "$initrd" ] && die "--initrd and --no-initrd contradict each other"
[ -z "$embed" ] || [ "$selfcheck" = 1 ] || die "--embed goes with --build-selfcheck"
[ -z "$embed" ] || [ -f "$embed" ] || die "--embed: no file $embed"
[ -n "$debian" ] && { [ "$no_initrd" = 1 ] || [ -n "$initrd" ]; } && die "--debian builds its own initramfs (drop --initrd/--no-initrd)"
if [ "$bench" = 1 ]; then
    [ "$no_initrd" = 0 ] || die "--bench needs the initramfs"
    [ -n "$init_path" ] || [ -n "$guest" ] || init_path=/bin/bench
fi
[ -z "$bench_cases" ] || [ -z "$initrd" ] || die "--bench-cases packs its own archive (drop --initrd)"
if [ -n "$soak" ]; then
    [[ "$soak" =~ ^[0-9]+$ ]] && [ "$soak" -ge 1 ] || die "--soak wants a number of minutes (1 or more)"
    [ "$bench" = 0 ] || die "--soak and --bench are separate runs"
    [ "$no_initrd" = 0 ] && [ -z "$initrd" ] && [ -z "$debian" ] || die "--soak packs its own archive (drop --initrd/--no-initrd/--debian)"
    [ -n "$init_path" ] || init_path=/bin/soak
fi
if [ -n "$guest" ]; then
    [ "$guest" = linux ] || [ "$guest" = qemu ] ||
        die "--guest wants linux (the project's VMM) or qemu (Debian's QEMU), each booting Debian's Linux Image"
    [[ "$guest_smp" =~ ^[0-9]+$ ]] && [ "$guest_smp" -ge 1 ] || die "--guest-smp wants a positive number"
    [[ "$guest_mem" =~ ^[0-9]+$ ]] || die "--guest-mem wants MiB"
    [ -z "$guest_initrd" ] || [ -f "$guest_initrd" ] || die "--guest-initrd: no file $guest_initrd"
    [ -z "$guest_initrd" ] || guest_initrd=$(cd "$(dirname "$guest_initrd")" && pwd)/$(basename "$guest_initrd")
    { [ -z "$debian" ] || [ "$guest" = qemu ]; } && { [ "$bench" = 0 ] || [ "$guest$soak" = linux ]; } && [ -z "$initrd" ] &&
        [ "$no_initrd" = 0 ] && { [ -n "$soak" ] || [ -z "$init_path" ]; } && [ -z "$board" ] && [ -z "$firmware" ] ||
        die "--guest packs its own archive with the VMM as init (drop --initrd/--init/--board/--firmware; --debian only with qemu; --bench only with linux)"
    [ "$guest" = qemu ] || { [ -z "$guest_wrap" ] && [ "$guest_machine" = virt,gic-version=3 ]; } ||
        die "--guest-wrap and --guest-machine go with --guest qemu"
    [ "$guest" = linux ] || [ -z "$guest_sme_vls$guest_hide" ] || die "QEMU offers guests no SME on KVM (drop --guest-sme-vls/--guest-hide)"
    [ "$guest" = linux ] || [ -z "$soak" ] || die "--soak with a guest goes with --guest linux"
    [[ "$guest_vms" =~ ^[0-9]+$ ]] && [ "$guest_vms" -ge 1 ] || die "--guest-vms wants a positive number"
    [ -n "$soak" ] || [ "$guest_vms" = 1 ] || die "--guest-vms goes with --soak (without it the VMM is the first process)"
    [ "$el" = 2 ] || die "--guest needs EL2 (drop --el1)"
elif [ -n "$guest_sve_vls$guest_sme_vls$guest_hide$guest_initrd$guest_append$guest_wrap" ] || [ "$guest_smp" != 1 ] || [ "$guest_mem" != 256 ] || [ "$guest_vms" != 1 ]; then
    die "the --guest-* options go with --guest linux or --guest qemu"
fi

# Installs Debian packages when root (as for QEMU below), otherwise says the exact command.
apt_install() {
    local cmd="apt-get install -y --no-install-recommends $*"
    if [ "$(id -u)" = 0 ]; then
        echo "qemu-run.sh: installing $* ($cmd)" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $cmd >&2
    else
        die "$1 is missing; install it with: sudo $cmd"
    fi
}

# QEMU from Debian when missing: as root, bookworm-backports' 10.0 (tests/debian-apt.sh's
# install_qemu, as .ci/run does); otherwise the command that would.
install_host_qemu() {
    if [ "$(id -u)" = 0 ]; then
        echo "qemu-run.sh: installing qemu-system-arm (bookworm-backports)" >&2
        install_qemu >&2 || die "qemu-system-arm could not be installed"
    else
        die "qemu-system-aarch64 is missing; install it with: sudo bash -c '. tests/debian-apt.sh && install_qemu'"
    fi
}

# The QEMU to run, resolved once: --qemu11's cache (fetched when missing), --qemu PATH or $QEMU,
# or qemu-system-aarch64 from PATH (installed from Debian when missing).
resolve_qemu() {
    if [ "$qemu11" = 1 ]; then
        qemu=$(qemu11_ensure "$root") || die "QEMU 11.1 is not available (see above)"
    elif [ -n "$qemu" ]; then
        if [[ "$qemu" == */* ]]; then
            [ -x "$qemu" ] || die "--qemu/\$QEMU: $qemu is not an executable file"
        else
            command -v "$qemu" >/dev/null || die "--qemu/\$QEMU: no $qemu on PATH"
        fi
    else
        command -v qemu-system-aarch64 >/dev/null || install_host_qemu
        qemu="qemu-system-aarch64"
    fi
}
if [ "$show_version" = 1 ]; then
    resolve_qemu
    "$qemu" --version | head -n 1
    exit 0
fi

# --compare: two runs of this script, one after the other, then the table and the plot.
if [ "$compare" = 1 ]; then
    [ "$linux" = 0 ] || [ -n "$compare_append" ] || die "--compare runs Linux itself (drop --linux)"
    [ -z "$guest" ] || die "--compare boots no guests: run --bench --guest linux and --bench --linux one after the other (docs/benchmarks.md)"
    out_dir="$root/target/bench"
    mkdir -p "$out_dir"
    if [ -n "$compare_policy" ]; then
        a_label="Svelt base" b_label="Svelt $compare_append"
        a_args=("${pass_args[@]}" --bench) b_args=("${pass_args[@]}" --bench --append "$compare_append")
    elif [ -n "$compare_append" ]; then
        a_label="Svelt" b_label="Svelt $compare_append"
        a_args=("${pass_args[@]}" --bench) b_args=("${pass_args[@]}" --bench --append "$compare_append")
    else
        a_label="Linux" b_label="Svelt"
        a_args=("${pass_args[@]}" --bench --linux) b_args=("${pass_args[@]}" --bench)
    fi
    # Svelt first (it builds the userland the Linux run then boots too).
    set +e
    "$0" "${b_args[@]}" | tee "$out_dir/b.log"
    b_status=${PIPESTATUS[0]}
    "$0" "${a_args[@]}" --no-build | tee "$out_dir/a.log"
    a_status=${PIPESTATUS[0]}
    set -e
    qemu_line=$("$0" "${pass_args[@]}" --no-build --qemu-version)
    (cd "$root" && cargo run --quiet --release -p svelt-tests --bin benchcmp -- \
        --a "$a_label=$out_dir/a.log" --b "$b_label=$out_dir/b.log" --out "$out_dir" \
        --qemu "$qemu_line" --flags "${pass_args[*]}")
    command -v gnuplot >/dev/null || apt_install gnuplot-nox
    gnuplot "$out_dir/vl.gp" && echo "qemu-run.sh: plot in $out_dir/vl.png" >&2
    echo "qemu-run.sh: table in $out_dir/compare.md and compare.csv" >&2
    [ "$a_status" = 0 ] && [ "$b_status" = 0 ] || exit 1
    exit 0
fi

# The toolchain rust-toolchain.toml pins may be installed without its targets or llvm-tools
# (rustup's auto-install off): rustup adds what is missing, and returns at once when nothing is.
if [ "$build" = 1 ]; then
    (cd "$root" && rustup toolchain install >/dev/null 2>&1) || die "rustup could not install the toolchain rust-toolchain.toml names"
fi
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
objcopy="$sysroot/lib/rustlib/$host/bin/llvm-objcopy"

if [ "$linux" = 0 ]; then
    if [ "$build" = 1 ]; then
        (cd "$root" && cargo build --quiet --release -p svelt-kernel --target "$target" --target-dir "$target_dir")
    fi
    [ -n "$elf" ] || elf="$target_dir/$target/release/svelt"
    [ -f "$elf" ] || die "no kernel at $elf (drop --no-build)"
    image="${elf}.img"
    if [ "$build" = 1 ] || [ ! -f "$image" ] || [ "$elf" -nt "$image" ]; then
        [ -x "$objcopy" ] || die "llvm-objcopy missing: rustup component add llvm-tools"
        # Written aside and renamed: a QEMU another test started meanwhile keeps reading the
        # whole old image, never a half-written one.
        "$objcopy" -O binary "$elf" "$image.$$" && mv -f "$image.$$" "$image"
    fi
fi

# The userland: the Rust test programs and init (user/), the glibc C programs (user/c/), packed
# by mkinitramfs into target/initramfs.cpio and .cpio.gz. Debug info stays in target/user/.
# Every program goes to /bin/tests (which the init runs) except init, bench (/bin/bench) and
# soak (/bin/soak).
user_dir="$root/target/user"
user_bin="$user_dir/aarch64-unknown-none/release"
default_initrd="$root/target/initramfs.cpio.gz"
build_userland() {
    (cd "$root" && cargo build --quiet --release -p svelt-user --target aarch64-unknown-none --target-dir "$user_dir")
    if ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -f /usr/aarch64-linux-gnu/lib/libc.a ]; then
        apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    fi
    [ -x "$objcopy" ] || die "llvm-objcopy missing: rustup component add llvm-tools"
    local stage="$user_dir/initramfs" c b name
    rm -rf "$stage" && mkdir -p "$stage/tests"
    for c in "$root"/user/c/*.c; do
        name=$(basename "$c" .c)
        aarch64-linux-gnu-gcc -static -O2 -g -pthread -Wall -Werror -o "$user_dir/$name" "$c"
        aarch64-linux-gnu-strip --strip-debug -o "$stage/tests/$name" "$user_dir/$name"
        # The same program as a static PIE (ET_DYN, relocated by itself at start-up).
        aarch64-linux-gnu-gcc -static-pie -O2 -g -pthread -Wall -Werror -o "$user_dir/${name}_pie" "$c"
        aarch64-linux-gnu-strip --strip-debug -o "$stage/tests/${name}_pie" "$user_dir/${name}_pie"
    done
    for b in "$root"/user/src/bin/*.rs; do
        name=$(basename "$b" .rs)
        if [ "$name" = init ]; then
            "$objcopy" --strip-debug "$user_bin/$name" "$stage/init"
        elif [ "$name" = bench ] || [ "$name" = soak ] || [ "$name" = guest_init ]; then
            "$objcopy" --strip-debug "$user_bin/$name" "$stage/$name"
        else
            "$objcopy" --strip-debug "$user_bin/$name" "$stage/tests/$name"
        fi
    done
    pack_userland --out "$root/target/initramfs.cpio" --gzip "$default_initrd"
}
# pack_userland ARGS...: mkinitramfs with the staged userland and ARGS (--out, --tree...).
pack_userland() {
    local stage="$user_dir/initramfs"
    (cd "$root" && cargo run --quiet --release -p svelt-tests --bin mkinitramfs -- "$@" \
        --init "$stage/init" --add etc/hello.txt="$root/user/data/hello.txt" \
        --add-exec bin/bench="$stage/bench" --add-exec bin/soak="$stage/soak" "$stage"/tests/*)
}
# --build-selfcheck: the kernel built (in its own target directory, so that the ordinary
# build is untouched) with an archive inside (SVELT_EMBED_ARCHIVE, read by kernel/build.rs):
# the test userland with the marker /etc/svelt-selfcheck (the init then prints the summary
# line), or the user's --embed FILE.
if [ "$selfcheck" = 1 ]; then
    sc_dir="$root/target/selfcheck"
    mkdir -p "$sc_dir"
    if [ -n "$embed" ]; then
        archive=$(cd "$(dirname "$embed")" && pwd)/$(basename "$embed")
        sc_kernel="$sc_dir/kernel-embed"
    else
        if [ "$build" = 1 ]; then build_userland; fi
        [ -f "$user_dir/initramfs/init" ] || die "no userland built (drop --no-build)"
        archive="$sc_dir/initramfs.cpio.gz"
        sc_kernel="$sc_dir/kernel"
        pack_userland --out "$sc_dir/new.cpio" --gzip "$sc_dir/new.cpio.gz" \
            --add etc/svelt-selfcheck="$root/user/data/svelt-selfcheck.txt"
        # Replaced only when it changed: a new file time alone would rebuild the kernel.
        if cmp -s "$sc_dir/new.cpio.gz" "$archive"; then
            rm -f "$sc_dir/new.cpio.gz"
        else
            mv -f "$sc_dir/new.cpio.gz" "$archive"
        fi
        rm -f "$sc_dir/new.cpio"
    fi
    (cd "$root" && SVELT_EMBED_ARCHIVE="$archive" cargo build --quiet --release -p svelt-kernel \
        --target "$target" --target-dir "$sc_kernel")
    [ -x "$objcopy" ] || die "llvm-objcopy missing: rustup component add llvm-tools"
    "$objcopy" -O binary "$sc_kernel/$target/release/svelt" "$root/target/svelt-selfcheck.img.$$"
    mv -f "$root/target/svelt-selfcheck.img.$$" "$root/target/svelt-selfcheck.img"
    echo "qemu-run.sh: wrote target/svelt-selfcheck.img ($(($(stat -c %s "$root/target/svelt-selfcheck.img") / 1024)) KiB, with $archive built in)" >&2
    echo "qemu-run.sh: boot it with: qemu-system-aarch64 -M virt -cpu max -nographic -kernel target/svelt-selfcheck.img" >&2
    exit 0
fi

default_userland=0
if [ "$no_initrd" = 0 ] && [ -z "$initrd" ]; then
    default_userland=1
    initrd="$default_initrd"
    if [ "$build" = 1 ]; then build_userland; fi
    [ -f "$initrd" ] || die "no initramfs at $initrd (drop --no-build)"
    if [ -n "$debian" ] && [ -z "$guest" ]; then
        # The same userland on top of Debian's packages, as one plain archive (no gzip: it is
        # large, and the guest would spend longer inflating it than QEMU spends loading it).
        tree=$(debian_userland "$root" "$debian") || die "--debian: the packages could not be fetched (no network?)"
        initrd="${tree%/root}.cpio"
        # Packed again when the userland was rebuilt (or is newer), into a new file renamed
        # over the old: a QEMU already booting the old archive keeps reading it whole.
        if [ "$build" = 1 ] || [ ! -f "$initrd" ] || [ "$initrd" -ot "$default_initrd" ]; then
            pack_userland --out "$initrd.$$" --tree "$tree"
            mv -f "$initrd.$$" "$initrd"
        fi
    fi
    if [ -n "$bench_cases" ]; then
        # The benchmark's case list, which Svelt's first process could not get otherwise.
        mkdir -p "$root/target/bench"
        echo "$bench_cases" >"$root/target/bench/cases.txt"
        initrd="$root/target/bench/initramfs.cpio"
        pack_userland --out "$initrd" --add etc/bench-cases="$root/target/bench/cases.txt"
    fi
    if [ -n "$soak" ]; then
        # fp-stress and the programs it starts (./fpsimd-test, ./sve-test...), built static from
        # Debian's linux-source by tests/selftests/build.sh (cached; with --no-build, reused
        # when already there), and the minutes, which Svelt's first process could not get
        # otherwise.
        fp_stage="$root/target/selftests/soak.stage/arm64"
        if [ "$build" = 1 ] || [ ! -f "$fp_stage/fp-stress" ]; then
            SELFTESTS_SUBTARGETS=fp SELFTESTS_NAME=soak SELFTESTS_ONLY=fp-stress SELFTESTS_EXTRA="" \
                SELFTESTS_SKIP="" "$root/tests/selftests/build.sh" >/dev/null ||
                die "--soak: tests/selftests/build.sh could not build fp-stress (see above)"
        fi
        mkdir -p "$root/target/soak"
        echo "$soak" >"$root/target/soak/minutes"
        soak_args=(--dir soak --dir soak/fp --add etc/soak-minutes="$root/target/soak/minutes")
        for p in fp-stress fpsimd-test kernel-test sve-test ssve-test za-test zt-test; do
            [ -f "$fp_stage/$p" ] || die "--soak: no $fp_stage/$p"
            soak_args+=(--add-exec "soak/fp/$p=$fp_stage/$p")
        done
        initrd="$root/target/soak/initramfs.cpio"
        pack_userland --out "$initrd" "${soak_args[@]}"
    fi
elif [ -n "$initrd" ]; then
    [ -f "$initrd" ] || die "no initramfs at $initrd"
fi

# Reference mode: Debian's arm64 Linux kernel, fetched with a private apt configuration (the
# host's own sources and package state are not touched) and cached under target/linux/.
linux_kernel() {
    local dir="$root/target/linux"
    local apt="$dir/apt" pkg ver deb
    if [ -f "$dir/vmlinuz" ] && [ -f "$dir/version" ]; then
        echo "qemu-run.sh: Linux $(cat "$dir/version") (cached in target/linux/)" >&2
        return
    fi
    command -v dpkg-deb >/dev/null || die "--linux needs apt-get and dpkg-deb (a Debian host)"
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || apt_install debian-archive-keyring
    trixie_backports_apt "$apt" || die "--linux needs a Debian mirror in the host's apt sources"
    echo "qemu-run.sh: fetching the trixie-backports arm64 package index" >&2
    APT_CONFIG="$apt/apt.conf" apt-get update -qq >&2 ||
        die "apt-get update of trixie-backports failed (network?)"
    # The newest plain arm64 flavour (not -cloud-, -rt- or -unsigned-).
    pkg=$(APT_CONFIG="$apt/apt.conf" apt-cache pkgnames linux-binary- |
        grep -E '^linux-binary-[0-9][0-9.]*(-[0-9]+)?\+deb[0-9]+-arm64$' | sort -V | tail -n 1)
    [ -n "$pkg" ] || die "no linux-binary-*-arm64 package in trixie-backports"
    (cd "$apt/deb" && APT_CONFIG="$apt/apt.conf" apt-get download -qq "$pkg" >&2) ||
        die "apt-get download $pkg failed (network?)"
    deb=$(ls "$apt"/deb/*.deb)
    ver=${pkg#linux-binary-}
    rm -rf "$apt/x"
    dpkg-deb -x "$deb" "$apt/x"
    cp "$apt/x/usr/lib/modules/$ver/vmlinuz" "$dir/vmlinuz" || die "no vmlinuz in $pkg"
    echo "$ver ($pkg $(dpkg-deb -f "$deb" Version))" >"$dir/version"
    rm -rf "$apt/x"
    echo "qemu-run.sh: Linux $(cat "$dir/version")" >&2
}
[ "$linux" = 1 ] && linux_kernel

# --guest linux: the host's archive holds the VMM as /init, its arguments, the guest's Image
# and the guest's initramfs (plain cpio: the host would spend longer inflating than loading).
# With --soak it is the soak archive with those added and /bin/soak as the first process, and
# the guest's initramfs is the soak archive itself (its /bin/soak the guest's first process).
# --guest qemu: Debian's QEMU and what it needs as the tree, QEMU's arguments and the host init
# script that runs it, the same Image and guest initramfs.
if [ -n "$guest" ]; then
    linux_kernel
    gdir="$root/target/guest"
    mkdir -p "$gdir"
    stage="$user_dir/initramfs"
    [ -f "$stage/tests/vmm" ] && [ -f "$stage/guest_init" ] || die "no VMM built (drop --no-build)"
    if [ -n "$soak" ]; then
        [ -n "$guest_initrd" ] || guest_initrd="$initrd"
        guest_append="rdinit=/bin/soak${guest_append:+ $guest_append}"
    elif [ "$bench" = 1 ]; then
        [ -n "$guest_initrd" ] || guest_initrd="$initrd"
        guest_append="rdinit=/bin/bench${guest_append:+ $guest_append}"
    elif [ -z "$guest_initrd" ]; then
        guest_initrd="$gdir/guest.cpio"
        (cd "$root" && cargo run --quiet --release -p svelt-tests --bin mkinitramfs -- \
            --out "$guest_initrd.$$" --init "$stage/guest_init") && mv -f "$guest_initrd.$$" "$guest_initrd"
    fi
fi
if [ "$guest" = qemu ]; then
    tree=$(debian_userland "$root" "qemu-system-arm,busybox-static${debian:+,$debian}") ||
        die "--guest qemu: Debian's QEMU could not be fetched (no network?)"
    cpu_q=host
    if [ -n "$guest_sve_vls" ]; then
        for b in ${guest_sve_vls//,/ }; do cpu_q="$cpu_q,sve$((b * 8))=on"; done
    fi
    {
        echo "$guest_wrap"
        for a in -accel kvm -cpu "$cpu_q" -M "$guest_machine" -smp "$guest_smp" -m "$guest_mem" \
            -nodefaults -display none -serial stdio -monitor none -no-reboot \
            -kernel /boot/Image -initrd /boot/initrd \
            -append "console=ttyAMA0 panic=-1 quiet${guest_append:+ $guest_append}"; do
            echo "$a"
        done
    } >"$gdir/qemu-args.$$"
    mv -f "$gdir/qemu-args.$$" "$gdir/qemu-args"
    initrd="$gdir/qemu-host.cpio"
    (cd "$root" && cargo run --quiet --release -p svelt-tests --bin mkinitramfs -- \
        --out "$initrd.$$" --tree "$tree" --init "$root/user/data/qemu-host-init.sh" --dir boot \
        --add etc/qemu-args="$gdir/qemu-args" --add boot/Image="$root/target/linux/vmlinuz" \
        --add boot/initrd="$guest_initrd") && mv -f "$initrd.$$" "$initrd"
elif [ -n "$guest" ]; then
    # One argument file per VM: a LIST of the --guest-* options may hold one list per VM,
    # separated by '/' (VM i takes the i-th, the last when there are fewer).
    pick() { local IFS=/ f; read -ra f <<<"$1"; [ "${#f[@]}" = 0 ] || echo "${f[$((i < ${#f[@]} ? i : ${#f[@]} - 1))]}"; }
    vm_files=()
    for ((i = 0; i < guest_vms; i++)); do
        sve_i=$(pick "$guest_sve_vls") sme_i=$(pick "$guest_sme_vls") hide_i=$(pick "$guest_hide")
        {
            echo --kernel; echo /boot/Image
            echo --initrd; echo /boot/initrd
            echo --smp; echo "$guest_smp"
            echo --mem; echo "$guest_mem"
            if [ -n "$sve_i" ]; then echo --sve-vls; echo "$sve_i"; fi
            if [ -n "$sme_i" ]; then echo --sme-vls; echo "$sme_i"; fi
            if [ -n "$hide_i" ]; then echo --hide; echo "$hide_i"; fi
            echo --append; echo "quiet${guest_append:+ $guest_append}"
        } >"$gdir/vmm-args.$i.$$"
        mv -f "$gdir/vmm-args.$i.$$" "$gdir/vmm-args.$i"
        if [ "$i" = 0 ]; then
            vm_files+=(--add etc/vmm-args="$gdir/vmm-args.0")
        else
            vm_files+=(--add "etc/vmm-args.$i=$gdir/vmm-args.$i")
        fi
    done
    boot_files=(--dir boot "${vm_files[@]}" --add boot/Image="$root/target/linux/vmlinuz"
        --add boot/initrd="$guest_initrd")
    if [ -n "$soak" ]; then
        echo "$guest_vms" >"$gdir/soak-vms"
        initrd="$root/target/soak/host.cpio"
        pack_userland --out "$initrd.$$" "${soak_args[@]}" "${boot_files[@]}" --add etc/soak-vms="$gdir/soak-vms"
        mv -f "$initrd.$$" "$initrd"
    else
        initrd="$gdir/host.cpio"
        (cd "$root" && cargo run --quiet --release -p svelt-tests --bin mkinitramfs -- \
            --out "$initrd.$$" --init "$stage/tests/vmm" "${boot_files[@]}") && mv -f "$initrd.$$" "$initrd"
    fi
fi

# --firmware uboot: Debian's U-Boot for QEMU (u-boot-qemu), installed when missing (as root).
uboot_bin=${UBOOT_BIN:-/usr/lib/u-boot/qemu_arm64/u-boot.bin}
if [ "$firmware" = uboot ] && [ ! -f "$uboot_bin" ]; then
    [ -z "${UBOOT_BIN:-}" ] || die "\$UBOOT_BIN: no file $UBOOT_BIN"
    apt_install u-boot-qemu
    [ -f "$uboot_bin" ] || die "u-boot-qemu installed no $uboot_bin"
fi

[ "$boot" = 1 ] || exit 0

resolve_qemu

machine="virt,gic-version=$gic"
[ "$el" = 2 ] && machine="$machine,virtualization=on"
# UEFI: edk2 starts the Image (from fw_cfg) as an EFI application. With acpi=off it hands over
# QEMU's device tree; with ACPI (virt's default) it gives the ACPI tables and no device tree.
edk2_fd=/usr/share/qemu-efi-aarch64/QEMU_EFI.fd
case "$firmware" in
    edk2|edk2-acpi)
        [ -f "$edk2_fd" ] || apt_install qemu-efi-aarch64
        [ -f "$edk2_fd" ] || die "no $edk2_fd (package qemu-efi-aarch64)"
        if [ "$firmware" = edk2 ]; then machine="$machine,acpi=off"; else machine="$machine,acpi=on"; fi
        ;;
esac
cpu="max,pauth-impdef=on,sve=on,sve-max-vq=$vq"
if [ "$sme" = on ]; then
    cpu="$cpu,sme=on"
    for bits in 128 256 512 1024 2048; do
        if [ $((bits / 8)) -le "$sme_max" ]; then cpu="$cpu,sme$bits=on"; else cpu="$cpu,sme$bits=off"; fi
    done
    cpu="$cpu,sme_fa64=$fa64"
else
    cpu="$cpu,sme=off"
fi
for o in "${cpu_opts[@]}"; do cpu="$cpu,$o"; done

# Linux takes an initramfs's first program from rdinit= (init= is for a root file system).
if [ -n "$init_path" ]; then
    if [ "$linux" = 1 ]; then append="$append rdinit=$init_path"; else append="$append init=$init_path"; fi
fi
args=(-M "$machine" -cpu "$cpu" -smp "$smp" -m "$mem"
      -nographic -nodefaults -serial stdio -monitor none -no-reboot)
# A board other than virt: its own machine and CPUs, and a device tree of ours, since QEMU
# writes none for it (it only adds /chosen and /memory to the one it is given).
case "$board" in
    ast2700) dts="$root/tests/data/ast2700-evb.dts" ;;
    raspi4b) dts="$root/tests/data/raspi4b.dts" ;;
esac
if [ -n "$board" ]; then
    dtb="$root/target/boards/$(basename "$dts" .dts).dtb"
    command -v dtc >/dev/null || apt_install device-tree-compiler
    if [ ! -f "$dtb" ] || [ "$dts" -nt "$dtb" ]; then
        mkdir -p "$(dirname "$dtb")"
        dtc -q -I dts -O dtb -o "$dtb.$$" "$dts" && mv -f "$dtb.$$" "$dtb" || die "dtc could not compile $dts"
    fi
fi
if [ "$board" = ast2700 ]; then
    # bmc-console=uart4 puts -serial stdio on UART4, the one UART wired straight to the GIC.
    args=(-M ast2700a1-evb,bmc-console=uart4 -m "$mem" -dtb "$dtb"
          -nographic -nodefaults -serial stdio -monitor none -no-reboot)
elif [ "$board" = raspi4b ]; then
    # The board's RAM is fixed (2 GiB, of which QEMU gives the Arm cores 960 MiB at 0); the
    # first -serial is UART0, the PL011.
    args=(-M raspi4b -dtb "$dtb"
          -nographic -nodefaults -serial stdio -monitor none -no-reboot)
fi
if [ "$linux" = 1 ]; then
    args+=(-kernel "$root/target/linux/vmlinuz" -append "console=ttyAMA0 panic=-1 quiet${append}")
else
    args+=(-semihosting-config enable=on,target=native
           -kernel "$image" -append "svelt.exit=semihosting${append}")
    case "$firmware" in edk2|edk2-acpi) args+=(-bios "$edk2_fd") ;; esac
fi
[ -n "$initrd" ] && args+=(-initrd "$initrd")
# U-Boot's default boot flow reads the kernel, the initrd and the command line from fw_cfg (qfw)
# and starts the Image with booti and QEMU's DTB, after its 2 s autoboot delay.
[ "$firmware" = uboot ] && args+=(-bios "$uboot_bin")
# One guest instruction = 1 ns of virtual time, idle time skipped: CNTVCT_EL0 (1 GHz) counts
# instructions and runs are repeatable (QEMU's docs/devel/tcg-icount.rst).
[ "$bench" = 1 ] && args+=(-icount shift=0,sleep=off)
if [ "$gdb" = 1 ]; then
    echo "qemu-run.sh: waiting for gdb: gdb-multiarch ${elf:-vmlinux} -ex 'target remote :1234'" >&2
    args+=(-s -S)
fi
if [ "$linux" = 0 ] && [ -z "$initrd" ]; then
    exec "$qemu" "${args[@]}" "${extra[@]}"
fi

# With a userland the output decides too: keep a copy to read the KTAP totals from.
log=$(mktemp "${TMPDIR:-/tmp}/qemu-run.XXXXXX")
trap 'rm -f "$log"' EXIT
set +e
"$qemu" "${args[@]}" "${extra[@]}" | tee "$log"
status=${PIPESTATUS[0]}
set -e
out=$(tr -d '\r' <"$log")
totals_failed() { grep -Eq '^# Totals: pass:[0-9]+ fail:[1-9]' <<<"$out"; }
init_status() { sed -n 's/^svelt-init: exit status \([0-9]*\)$/\1/p' <<<"$out" | tail -n 1; }
bench_status() { sed -n 's/^svelt-bench: exit status \([0-9]*\)$/\1/p' <<<"$out" | tail -n 1; }
soak_status() { sed -n 's/^svelt-soak: exit status \([0-9]*\)$/\1/p' <<<"$out" | tail -n 1; }
qemu_status() { sed -n 's/^svelt-qemu: exit status \([0-9]*\)$/\1/p' <<<"$out" | tail -n 1; }
guest_status() { sed -n 's/^\(vmm-guest\|svelt-init\): exit status \([0-9]*\)$/\2/p' <<<"$out" | tail -n 1; }
vmm_status() { sed -n 's/^svelt-vmm: exit status \([0-9]*\)$/\1/p' <<<"$out" | tail -n 1; }
if [ "$guest" = qemu ]; then
    s=$(guest_status)
    if [ "$status" != 0 ] && [ "$linux" = 0 ]; then
        : # Svelt's own failure
    elif ! grep -q '^svelt-qemu: exit status ' <<<"$out"; then
        echo "qemu-run.sh: the host's init printed no 'svelt-qemu: exit status' line" >&2
        status=1
    elif [ "$(qemu_status)" != 0 ]; then
        status=$(qemu_status)
    elif [ -z "$s" ]; then
        echo "qemu-run.sh: the guest printed no 'vmm-guest:' or 'svelt-init: exit status' line" >&2
        status=1
    else
        status=$s
    fi
elif [ -n "$guest" ] && [ -z "$soak" ]; then
    s=$(vmm_status)
    if [ -z "$s" ]; then
        echo "qemu-run.sh: the VMM printed no 'svelt-vmm: exit status' line" >&2
        [ "$linux" = 0 ] && [ "$status" != 0 ] || status=1
    elif [ "$linux" = 1 ] || [ "$status" = 0 ]; then
        status=$s
    fi
    if [ "$bench" = 1 ] && [ "$status" = 0 ] && [ "$(bench_status)" != 0 ]; then
        echo "qemu-run.sh: the guest's benchmark did not end with 'svelt-bench: exit status 0'" >&2
        status=1
    fi
elif [ "$bench" = 1 ] && [ "$init_path" = /bin/bench ]; then
    s=$(bench_status)
    if [ -z "$s" ]; then
        echo "qemu-run.sh: the benchmark printed no 'svelt-bench: exit status' line" >&2
        [ "$linux" = 0 ] && [ "$status" != 0 ] || status=1
    elif [ "$linux" = 1 ] || [ "$status" = 0 ]; then
        status=$s
    fi
elif [ -n "$soak" ] && [ "$init_path" = /bin/soak ]; then
    s=$(soak_status)
    if [ -z "$s" ]; then
        echo "qemu-run.sh: the soak run printed no 'svelt-soak: exit status' line" >&2
        [ "$linux" = 0 ] && [ "$status" != 0 ] || status=1
    elif [ "$linux" = 1 ] || [ "$status" = 0 ]; then
        status=$s
    fi
elif [ "$linux" = 1 ]; then
    s=$(init_status)
    if [ -n "$s" ]; then
        status=$s
    elif [ -n "$init_path" ] && grep -q '^# Totals:' <<<"$out" && ! totals_failed; then
        status=0 # one test program as the init: its own totals decide
    else
        echo "qemu-run.sh: Linux printed no 'svelt-init: exit status' line" >&2
        status=1
    fi
elif [ "$status" = 0 ]; then
    if totals_failed; then
        status=1
    elif [ "$default_userland" = 1 ] && [ -z "$init_path" ] && [ "$(init_status)" != 0 ]; then
        echo "qemu-run.sh: no 'svelt-init: exit status 0' line" >&2
        status=1
    fi
fi
exit "$status"
