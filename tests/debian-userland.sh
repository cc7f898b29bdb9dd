# Sourced by qemu-run.sh (after debian-apt.sh). debian_userland ROOT PKGS: unpacks Debian's arm64
# packages PKGS (comma- or space-separated) and everything they depend on into a file tree, as a
# Debian system would have them installed but without running any maintainer script, and prints
# the tree's path. The packages come from trixie on the mirror the host's apt sources name,
# through a private apt configuration (the host's sources and package state are untouched);
# downloads and the unpacked tree are cached in ROOT/target/debian/, one tree per package set
# (delete the directory to fetch newer versions).
#
# The tree gets what an installed system's maintainer scripts or base-files would have provided
# and the programs need: the merged-/usr links (/bin, /sbin, /lib -> usr/...), /etc/passwd and
# /etc/group with root, and /usr/bin/sh and /usr/bin/awk linked to a provider in the set.
DEBIAN_SUITE=trixie

debian_userland() {
    local root=$1 pkgs key dir apt debs tree deb
    pkgs=$(tr ', ' '\n\n' <<<"$2" | sed '/^$/d' | sort -u | tr '\n' ' ')
    pkgs=${pkgs% }
    [ -n "$pkgs" ] || { echo "debian_userland: no packages named" >&2; return 2; }
    for p in $pkgs; do
        [[ "$p" =~ ^[a-z0-9][a-z0-9+.-]*$ ]] || { echo "debian_userland: not a package name: $p" >&2; return 2; }
    done
    key=$(tr ' ' '_' <<<"$pkgs")
    dir="$root/target/debian/$key"
    tree="$dir/root"
    if [ -f "$dir/done" ]; then
        echo "$tree"
        return 0
    fi
    command -v dpkg-deb >/dev/null || { echo "debian_userland: needs apt-get and dpkg-deb (a Debian host)" >&2; return 2; }
    apt="$root/target/debian/apt"
    # One apt state for every set; its lists are refreshed when a new set is built.
    private_apt "$apt" arm64 "$DEBIAN_SUITE" || return 1
    echo "debian_userland: fetching $pkgs and their dependencies ($DEBIAN_SUITE, arm64)" >&2
    APT_CONFIG="$apt/apt.conf" apt-get -q update >&2 || return 1
    rm -rf "$dir"
    debs="$dir/debs"
    mkdir -p "$debs/partial" "$tree"
    # shellcheck disable=SC2086 # one word per package
    APT_CONFIG="$apt/apt.conf" apt-get -q -y --download-only --no-install-recommends \
        -o Dir::Cache::archives="$debs" install $pkgs >&2 || return 1
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$tree" || return 1
    done
    # Merged /usr: trixie's packages ship /usr/bin, /usr/lib...; the links come from base-files
    # and usrmerge on an installed system. PT_INTERP names /lib/ld-linux-aarch64.so.1.
    for d in bin sbin lib; do
        if [ ! -e "$tree/$d" ] && [ ! -L "$tree/$d" ]; then
            mkdir -p "$tree/usr/$d"
            ln -s "usr/$d" "$tree/$d"
        fi
    done
    mkdir -p "$tree/etc" "$tree/root" "$tree/tmp" "$tree/var/tmp"
    [ -f "$tree/etc/passwd" ] || echo 'root:x:0:0:root:/root:/bin/sh' >"$tree/etc/passwd"
    [ -f "$tree/etc/group" ] || echo 'root:x:0:' >"$tree/etc/group"
    # Links an installed system gets from maintainer scripts (update-alternatives, busybox's
    # applet set-up): sh and awk, to the first provider present.
    debian_link "$tree" sh dash bash busybox
    debian_link "$tree" awk gawk mawk original-awk busybox
    rm -rf "$debs" "$tree/usr/share/doc" "$tree/usr/share/man" "$tree/usr/share/info" \
        "$tree/usr/share/locale"
    touch "$dir/done"
    echo "$tree"
}

# debian_link TREE NAME PROVIDER...: TREE/usr/bin/NAME -> the first PROVIDER in TREE/usr/bin,
# unless NAME is there already.
debian_link() {
    local tree=$1 name=$2 p
    shift 2
    [ -e "$tree/usr/bin/$name" ] || [ -L "$tree/usr/bin/$name" ] && return 0
    for p in "$@"; do
        if [ -x "$tree/usr/bin/$p" ]; then
            ln -s "$p" "$tree/usr/bin/$name"
            return 0
        fi
    done
}
