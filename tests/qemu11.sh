#!/usr/bin/env bash
# QEMU 11.1 (SME2, ZT0 and GCS in -cpu max) on a Debian bookworm host, cached in target/qemu11/.
#
# Sourced by qemu-run.sh and .ci/run (qemu11_ensure); run on its own, `tests/qemu11.sh` makes it
# ready and prints the wrapper's path.
#
# trixie-backports has qemu-system-arm 11.1, but it needs trixie's libc and does not install on
# bookworm. So the package and its whole dependency closure are downloaded with a private apt
# configuration (trixie + trixie-backports for the host's architecture, an empty package state so
# that apt resolves every dependency; the host's own sources and package state are not touched)
# and unpacked with dpkg-deb -x into target/qemu11/root: no maintainer scripts run, no chroot, no
# root needed. The wrapper target/qemu11/qemu-system-aarch64 runs root/usr/bin/qemu-system-aarch64
# through the root's own dynamic loader and libraries, with the root's data directory (-L) and
# modules, so every host path on its command line stays what it is (docs/qemu.md).
#
# The cache is used as it is once made; `rm -rf target/qemu11` fetches the newest again.

# shellcheck source=tests/debian-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/debian-apt.sh"

# qemu11_build DIR: downloads and unpacks QEMU into DIR/root and writes DIR/qemu-system-aarch64
# and DIR/version. Progress goes to stderr.
qemu11_build() {
    local dir=$1 apt="$1/apt" new="$1/root.new" deb loader libdir wrapper="$1/qemu-system-aarch64"
    local loaders
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        echo "qemu11: needs apt-get and dpkg-deb (a Debian host)" >&2
        return 1
    fi
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        { echo "qemu11: needs the Debian archive keyring: apt-get install debian-archive-keyring" >&2; return 1; }
    # The host architecture's packages from trixie and trixie-backports.
    private_apt "$apt" "" trixie trixie-backports || { echo "qemu11: needs a Debian mirror in the host's apt sources" >&2; return 1; }
    echo "qemu11: fetching the trixie and trixie-backports package indexes" >&2
    APT_CONFIG="$apt/apt.conf" apt-get update -qq >&2 ||
        { echo "qemu11: apt-get update of trixie failed (network?)" >&2; return 1; }
    echo "qemu11: downloading qemu-system-arm from trixie-backports with its dependencies" >&2
    APT_CONFIG="$apt/apt.conf" apt-get install -qq -y --download-only --no-install-recommends \
        -t trixie-backports qemu-system-arm >/dev/null ||
        { echo "qemu11: downloading qemu-system-arm failed (network?)" >&2; return 1; }
    rm -rf "$new"
    for deb in "$apt"/cache/archives/*.deb; do
        dpkg-deb -x "$deb" "$new" || { echo "qemu11: cannot unpack $deb" >&2; return 1; }
    done
    # trixie is merged-/usr: the loader and the libraries live in usr/lib/TRIPLET.
    loaders=("$new"/usr/lib/*-linux-gnu/ld-linux*.so.[0-9])
    loader=${loaders[0]}
    [ -f "$loader" ] || { echo "qemu11: no dynamic loader in the unpacked packages" >&2; return 1; }
    libdir=$(dirname "$loader")
    if "$loader" --library-path "$libdir" --list "$new/usr/bin/qemu-system-aarch64" | grep 'not found' >&2; then
        echo "qemu11: libraries missing from the unpacked packages" >&2
        return 1
    fi
    rm -rf "$dir/root" "$apt"
    mv "$new" "$dir/root"
    # The paths inside the root are relative to the wrapper's real location, so that the cache
    # may be reached through a symbolic link.
    loader=${loader#"$new"/} libdir=${libdir#"$new"/}
    cat >"$wrapper.tmp" <<EOF
#!/bin/sh
# Made by tests/qemu11.sh: QEMU from Debian trixie-backports, run from the root beside this file.
root=\$(dirname "\$(readlink -f "\$0")")/root
QEMU_MODULE_DIR="\$root/$libdir/qemu" exec "\$root/$loader" --library-path "\$root/$libdir" \\
    "\$root/usr/bin/qemu-system-aarch64" -L "\$root/usr/share/qemu" "\$@"
EOF
    chmod +x "$wrapper.tmp"
    mv "$wrapper.tmp" "$wrapper"
    "$wrapper" --version | head -n 1 >"$dir/version"
    if [ ! -s "$dir/version" ]; then
        echo "qemu11: the unpacked QEMU does not run" >&2
        rm -f "$dir/version"
        return 1
    fi
    echo "qemu11: $(cat "$dir/version") in ${dir#"$PWD"/}/ ($(du -sh "$dir/root" | cut -f1))" >&2
}

# qemu11_ensure TOP: QEMU 11.1 under TOP/target/qemu11 (made once, then reused); prints the
# wrapper's path. One build at a time: callers running side by side wait for the first.
qemu11_ensure() {
    local dir="$1/target/qemu11"
    mkdir -p "$dir" || return 1
    (
        flock 9
        if [ ! -x "$dir/qemu-system-aarch64" ] || [ ! -s "$dir/version" ]; then
            qemu11_build "$dir" || exit 1
        fi
    ) 9>"$dir.lock" || return 1
    echo "$dir/qemu-system-aarch64"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    qemu11_ensure "$(cd "$(dirname "$0")/.." && pwd)"
fi
