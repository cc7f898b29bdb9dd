#!/usr/bin/env bash
# Debian's arm64 GRUB EFI image (the signed monolithic grubaa64.efi from grub-efi-arm64-signed:
# trixie's GRUB 2.12, bookworm's 2.06), cached in target/grub/SUITE/ for tests/tests/firmware.rs's
# GRUB boots.
#
# The package is downloaded with a private apt configuration for arm64 (tests/debian-apt.sh; the
# host's own sources and package state are not touched) and unpacked with dpkg-deb -x: nothing is
# installed. Run on its own, `tests/grub.sh [SUITE]` (trixie by default) makes the cache ready and
# prints the image's path; target/grub/SUITE/version holds the package's version.
# `rm -rf target/grub` fetches the newest again.
#
# The image carries no config of its own but a memdisk whose grub.cfg looks for the real one: its
# prefix is /EFI/debian on the volume GRUB was loaded from; when that directory is missing it
# looks for /.disk/info (an installer disc) and then reads $cmdpath/grub.cfg, the grub.cfg beside
# the image itself (EFI/BOOT/grub.cfg for the removable-media path EFI/BOOT/BOOTAA64.EFI).

# shellcheck source=tests/debian-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/debian-apt.sh"

GRUB_PACKAGE=grub-efi-arm64-signed
GRUB_IMAGE=usr/lib/grub/arm64-efi-signed/grubaa64.efi.signed

# grub_build DIR SUITE: downloads and unpacks SUITE's package into DIR/root and writes
# DIR/version.
grub_build() {
    local dir=$1 suite=$2 apt="$1/apt" new="$1/root.new" deb
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        echo "grub: needs apt-get and dpkg-deb (a Debian host)" >&2
        return 1
    fi
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        { echo "grub: needs the Debian archive keyring: apt-get install debian-archive-keyring" >&2; return 1; }
    private_apt "$apt" arm64 "$suite" || { echo "grub: needs a Debian mirror in the host's apt sources" >&2; return 1; }
    echo "grub: fetching $suite's arm64 package index" >&2
    APT_CONFIG="$apt/apt.conf" apt-get update -qq >&2 ||
        { echo "grub: apt-get update of $suite failed (network?)" >&2; return 1; }
    echo "grub: downloading $GRUB_PACKAGE from $suite" >&2
    (cd "$apt/deb" && APT_CONFIG="$apt/apt.conf" apt-get download -qq "$GRUB_PACKAGE" >&2) ||
        { echo "grub: downloading $GRUB_PACKAGE failed (network?)" >&2; return 1; }
    deb=$(echo "$apt"/deb/"$GRUB_PACKAGE"_*.deb)
    rm -rf "$new"
    dpkg-deb -x "$deb" "$new" || { echo "grub: cannot unpack $deb" >&2; return 1; }
    [ -f "$new/$GRUB_IMAGE" ] || { echo "grub: no $GRUB_IMAGE in $deb" >&2; return 1; }
    dpkg-deb -f "$deb" Version >"$new/version"
    rm -rf "$dir/root" "$apt"
    mv "$new" "$dir/root"
    mv "$dir/root/version" "$dir/version"
    echo "grub: $GRUB_PACKAGE $(cat "$dir/version") in ${dir#"$PWD"/}/" >&2
}

# grub_ensure TOP SUITE: SUITE's GRUB image under TOP/target/grub/SUITE (fetched once, then
# reused); prints its path. One download at a time: callers running side by side wait for the
# first.
grub_ensure() {
    local dir="$1/target/grub/$2"
    case $2 in *[!a-z-]* | "") echo "grub: not a suite name: $2" >&2; return 1 ;; esac
    mkdir -p "$dir" || return 1
    (
        flock 9
        if [ ! -f "$dir/root/$GRUB_IMAGE" ] || [ ! -s "$dir/version" ]; then
            grub_build "$dir" "$2" || exit 1
        fi
    ) 9>"$dir.lock" || return 1
    echo "$dir/root/$GRUB_IMAGE"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    grub_ensure "$(cd "$(dirname "$0")/.." && pwd)" "${1:-trixie}"
fi
