#!/usr/bin/env bash
# Builds Linux's own arm64 selftests (tools/testing/selftests/arm64) as static arm64 programs and
# packs them, with a static runner as /init (tests/selftests/runner.c), into
# target/selftests/selftests.cpio.gz (newc, gzip):
#
#   tests/selftests/build.sh            # prints the archive's path on the last line of stdout
#   ./qemu-run.sh --initrd target/selftests/selftests.cpio.gz [--linux]
#
# The source comes from Debian's linux-source-7.3 package (trixie-backports), fetched with a
# private apt configuration under target/selftests/apt (the host's own apt sources and package
# state are not touched; the mirror is the one the host's sources name; the index is checked
# against debian-archive-keyring, as qemu-run.sh does for --linux). Everything is cached under
# target/selftests/: delete a step's output (or the whole directory) to redo it.
#
# Environment: SELFTESTS_SUBTARGETS (default below) picks the arm64 sub-directories to pack
# (each is built once and cached on its own, so archives of different sets share the builds);
# SELFTESTS_SKIP lists programs packed but reported as skipped by the runner; SELFTESTS_ONLY
# lists the only programs to run; SELFTESTS_EXTRA lists programs upstream builds but does not run
# (TEST_GEN_PROGS_EXTENDED, such as zt-ptrace) to run after the listed ones; SELFTESTS_TIMEOUT is
# the runner's limit per program in seconds (default 60), SELFTESTS_LONG ("NAME=SECONDS ...")
# the exceptions; SELFTESTS_NAME (default "selftests") names the archive,
# target/selftests/NAME.cpio.gz, and its staging directory, target/selftests/NAME.stage (the
# runner's list is NAME.stage/list), so tests that pack different selections do not overwrite
# each other's. The archive is always repacked (a few seconds).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tests/selftests"
out="$root/target/selftests"
src_pkg=linux-source-7.3
# Upstream's whole list (ARM64_SUBTARGETS); every one builds static with Debian's gcc 12. The
# subtarget "kvm" is Linux's KVM selftests instead (build_kvm_selftests below).
subtargets=${SELFTESTS_SUBTARGETS:-"tags signal pauth fp mte bti abi gcs"}
skip=${SELFTESTS_SKIP-}
only=${SELFTESTS_ONLY-}
extra=${SELFTESTS_EXTRA-}
name=${SELFTESTS_NAME:-selftests}
[[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "selftests: SELFTESTS_NAME wants letters, digits, - and _" >&2; exit 2; }
timeout=${SELFTESTS_TIMEOUT:-60}
# Programs allowed longer: fp-stress runs 34 busy processes (FPSIMD, SVE, SSVE, ZA at each
# vector length, on each CPU) and signals them every 25 ms for 400 rounds; under TCG that takes
# ~27 s on Linux and 50-65 s on Svelt.
long=${SELFTESTS_LONG-"fp-stress=180"}

log() { echo "selftests: $*" >&2; }
die() { echo "selftests: $*" >&2; exit 2; }

apt_install() {
    local cmd="apt-get install -y --no-install-recommends $*"
    if [ "$(id -u)" = 0 ]; then
        log "installing $* ($cmd)"
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $cmd >&2
    else
        die "$1 is missing; install it with: sudo $cmd"
    fi
}

need() { # need COMMAND PACKAGE
    command -v "$1" >/dev/null || apt_install "$2"
}

# host_mirror, trixie_backports_apt: the host's mirror and a private apt configuration on it.
. "$(dirname "${BASH_SOURCE[0]}")/../debian-apt.sh"

# 1. The kernel source tarball, from linux-source-7.3 (trixie-backports).
fetch_source() {
    local apt="$out/apt" deb
    if [ -f "$out/source.tar.xz" ] && [ -f "$out/source-version" ]; then
        log "$(cat "$out/source-version") (cached in target/selftests/)"
        return
    fi
    command -v dpkg-deb >/dev/null || die "needs apt-get and dpkg-deb (a Debian host)"
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || apt_install debian-archive-keyring
    trixie_backports_apt "$apt" || die "no Debian mirror in the host's apt sources"
    log "fetching the trixie-backports package index from $(host_mirror)"
    APT_CONFIG="$apt/apt.conf" apt-get update -qq >&2 ||
        die "apt-get update of trixie-backports failed (network?)"
    log "downloading $src_pkg"
    (cd "$apt/deb" && APT_CONFIG="$apt/apt.conf" apt-get download -qq "$src_pkg" >&2) ||
        die "apt-get download $src_pkg failed (network?)"
    deb=$(ls "$apt"/deb/*.deb)
    rm -rf "$apt/x"
    dpkg-deb -x "$deb" "$apt/x"
    mv "$apt/x/usr/src/$src_pkg.tar.xz" "$out/source.tar.xz" || die "no $src_pkg.tar.xz in $deb"
    echo "$src_pkg $(dpkg-deb -f "$deb" Version)" >"$out/source-version"
    rm -rf "$apt/x" "$deb"
    log "$(cat "$out/source-version")"
}

# 2. The source tree, unpacked (without what the headers and selftests never read).
unpack_source() {
    if [ -f "$out/linux/.unpacked" ]; then return; fi
    need xz xz-utils
    log "unpacking the kernel source"
    rm -rf "$out/linux" "$out/linux.tmp"
    mkdir -p "$out/linux.tmp"
    tar -xJf "$out/source.tar.xz" -C "$out/linux.tmp" --strip-components=1 \
        --exclude="$src_pkg/Documentation" --exclude="$src_pkg/drivers" --exclude="$src_pkg/sound" \
        --exclude="$src_pkg/net" --exclude="$src_pkg/fs" --exclude="$src_pkg/rust" \
        --exclude="$src_pkg/samples"
    touch "$out/linux.tmp/.unpacked"
    mv "$out/linux.tmp" "$out/linux"
}

# 3. The uapi headers for arm64.
install_headers() {
    if [ -f "$out/headers/.installed" ]; then return; fi
    need make make
    need rsync rsync # headers_install copies with it
    log "make headers_install ARCH=arm64"
    rm -rf "$out/headers"
    make -s -C "$out/linux" ARCH=arm64 O="$out/hdr-build" headers_install \
        INSTALL_HDR_PATH="$out/headers" >&2
    touch "$out/headers/.installed"
}

# 4. The selftests, static, each subtarget installed into target/selftests/install/<subtarget>/
#    (its programs in arm64/, its run list in kselftest-list.txt).
build_selftests() {
    local sub
    # The layout before subtargets were cached apart: one install/arm64 for a whole set.
    [ -d "$out/install/arm64" ] && rm -rf "$out/install" "$out/kselftest-build"
    for sub in $subtargets; do
        [ -f "$out/install/$sub/.built" ] && continue
        if [ "$sub" = kvm ]; then
            build_kvm_selftests
            continue
        fi
        if ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -f /usr/aarch64-linux-gnu/lib/libc.a ]; then
            apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
        fi
        log "building tools/testing/selftests/arm64/$sub, static"
        rm -rf "$out/install/$sub" "$out/kselftest-build/$sub"
        make -s -C "$out/linux/tools/testing/selftests" -j"$(nproc)" \
            ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- CC="aarch64-linux-gnu-gcc -static" \
            TARGETS=arm64 ARM64_SUBTARGETS="$sub" \
            KHDR_INCLUDES="-isystem $out/headers/include" \
            O="$out/kselftest-build/$sub" INSTALL_PATH="$out/install/$sub" install >&2
        touch "$out/install/$sub/.built"
    done
}

# 4b. The subtarget "kvm": Linux's KVM selftests (tools/testing/selftests/kvm, the generic
#     programs and arm64/), static, into target/selftests/install/kvm/ (programs only: they
#     need no helpers). Their run list is every program built, in name order.
build_kvm_selftests() {
    local build="$out/kselftest-build/kvm" dest="$out/install/kvm" f
    if ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -f /usr/aarch64-linux-gnu/lib/libc.a ]; then
        apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    fi
    log "building tools/testing/selftests/kvm, static"
    rm -rf "$build" "$dest"
    mkdir -p "$build" "$dest/kvm"
    make -s -C "$out/linux/tools/testing/selftests/kvm" -j"$(nproc)" \
        ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- CC=aarch64-linux-gnu-gcc LDFLAGS=-static \
        KHDR_INCLUDES="-isystem $out/headers/include" OUTPUT="$build" >&2
    for f in "$build"/* "$build"/arm64/*; do
        [ -f "$f" ] && [ -x "$f" ] && head -c 4 "$f" | grep -q ELF || continue
        cp "$f" "$dest/kvm/"
    done
    (cd "$dest/kvm" && ls | sed 's/^/kvm:/') >"$dest/kselftest-list.txt"
    touch "$dest/.built"
}

# Whether word $1 is one of the space-separated words $2 (grep -w would take "ptrace" in
# "sve-ptrace").
among() {
    tr ' ' '\n' <<<"$2" | grep -qxF -- "$1"
}

# One list line for program $1 of directory $2 (default arm64): skipped, or with its own time
# limit.
list_line() {
    local limit dir=${2:-arm64}
    if among "$1" "$skip"; then
        echo "$dir/$1 # SKIP by build.sh (SELFTESTS_SKIP)"
    else
        limit=$(tr ' ' '\n' <<<"$long" | sed -n "s/^$1=//p")
        echo "$dir/$1${limit:+ timeout=$limit}"
    fi
}

# 5. The archive: /init (the runner), /selftests/list, /selftests/arm64/* stripped.
pack() {
    local stage="$out/$name.stage" f prog sub list
    log "packing target/selftests/$name.cpio.gz"
    rm -rf "$stage" && mkdir -p "$stage/arm64" "$stage/kvm"
    aarch64-linux-gnu-gcc -static -O2 -g -Wall -Wextra -Werror -o "$out/runner" "$here/runner.c"
    aarch64-linux-gnu-strip -o "$stage/init" "$out/runner"
    # Every installed executable (the listed programs and the helpers they start, such as
    # fp-stress's ./sve-test); not the objects and not the shell scripts (no shell here).
    for sub in $subtargets; do
        for f in "$out/install/$sub"/arm64/* "$out/install/$sub"/kvm/*; do
            [ -f "$f" ] && [ -x "$f" ] && head -c 4 "$f" | grep -q ELF || continue
            aarch64-linux-gnu-strip -o "$stage/$(basename "$(dirname "$f")")/$(basename "$f")" "$f"
        done
    done
    # The programs to run, in the subtargets' order and each kselftest-list.txt's, then the
    # extra ones.
    list="$stage/list"
    echo "timeout=$timeout" >"$list"
    for sub in $subtargets; do
        sed -n 's/^\(arm64\|kvm\)://p' "$out/install/$sub/kselftest-list.txt" | while read -r prog; do
            if [ -n "$only" ] && ! among "$prog" "$only"; then continue; fi
            if [ "$sub" = kvm ]; then list_line "$prog" kvm; else list_line "$prog"; fi
        done
    done >>"$list"
    for prog in $extra; do
        [ -x "$stage/arm64/$prog" ] || die "SELFTESTS_EXTRA: no program $prog in $subtargets"
        list_line "$prog" >>"$list"
    done
    local args=(--dir selftests --dir selftests/arm64 --add selftests/list="$list")
    [ -n "$(ls "$stage/kvm")" ] && args+=(--dir selftests/kvm)
    for f in "$stage"/arm64/* "$stage"/kvm/*; do
        [ -f "$f" ] || continue
        args+=(--add-exec "selftests/$(basename "$(dirname "$f")")/$(basename "$f")=$f")
    done
    (cd "$root" && cargo run --quiet --release -p svelt-tests --bin mkinitramfs -- \
        --out "$out/$name.cpio" --gzip "$out/$name.cpio.gz" --init "$stage/init" "${args[@]}")
    log "$(grep -cE '^(arm64|kvm)/' "$list") programs ($(grep -c SKIP "$list") skipped); $(du -sh --apparent-size "$stage" | cut -f1) unpacked, $(du -h --apparent-size "$out/$name.cpio.gz" | cut -f1) gzip"
}

t0=$(date +%s)
fetch_source
unpack_source
install_headers
build_selftests
pack
log "done in $(($(date +%s) - t0)) s"
echo "$out/$name.cpio.gz"
