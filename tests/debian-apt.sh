# Sourced by qemu-run.sh, .ci/run and tests/selftests/build.sh. host_mirror: the Debian mirror the host's own
# apt sources name (deb822 debian.sources or the one-line sources.list), so that nothing in the
# project names a mirror host. Prints it without a trailing slash; fails if there is none.
host_mirror() {
    local m=""
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
            /etc/apt/sources.list.d/debian.sources)
    fi
    if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
        m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { if ($i !~ /security/) { print $i; exit } else break } }' \
            /etc/apt/sources.list)
    fi
    if [ -z "$m" ]; then
        echo "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list" >&2
        return 1
    fi
    echo "${m%/}"
}

# trixie_backports_apt DIR: a private apt configuration in DIR (DIR/apt.conf, for APT_CONFIG)
# for arm64 packages from trixie-backports on the host's mirror, checked with the Debian archive
# keyring; the host's own sources and package state are not touched. Also makes DIR/deb for
# downloads. Fails if the host names no mirror.
trixie_backports_apt() {
    local apt=$1 mirror
    mirror=$(host_mirror) || return 1
    rm -rf "$apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/deb"
    touch "$apt/status"
    echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie-backports main" \
        >"$apt/sources.list"
    printf '%s\n' \
        "Dir::Etc::SourceList \"$apt/sources.list\";" \
        "Dir::Etc::SourceParts \"$apt/parts\";" \
        "Dir::Etc::Preferences \"$apt/preferences\";" \
        "Dir::Etc::PreferencesParts \"$apt/parts\";" \
        "Dir::State \"$apt\";" \
        "Dir::State::Lists \"$apt/lists\";" \
        "Dir::State::status \"$apt/status\";" \
        "Dir::Cache \"$apt/cache\";" \
        'APT::Architecture "arm64";' \
        'APT::Architectures { "arm64"; };' \
        'APT::Sandbox::User "root";' >"$apt/apt.conf"
}
