# Sourced by qemu-run.sh, .ci/run, tests/selftests/build.sh and tests/grub.sh. host_mirror:
# the Debian mirror the host's own apt sources name (deb822 debian.sources or the one-line
# sources.list), so that nothing in the project names a mirror host. Prints it without a
# trailing slash; fails if there is none.
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

# private_apt DIR ARCH SUITE...: a private apt configuration in DIR (DIR/apt.conf, for
# APT_CONFIG) for ARCH's packages (empty: the host's) from the SUITEs on the host's mirror,
# checked with the Debian archive keyring, with an empty package state (apt resolves every
# dependency); the host's own sources and package state are not touched. Also makes DIR/deb for
# downloads. Fails if the host names no mirror.
private_apt() {
    local apt=$1 arch=$2 mirror suite opt=""
    shift 2
    mirror=$(host_mirror) || return 1
    rm -rf "$apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/deb"
    touch "$apt/status"
    if [ -n "$arch" ]; then opt="arch=$arch "; fi
    for suite in "$@"; do
        echo "deb [${opt}signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main"
    done >"$apt/sources.list"
    {
        printf '%s\n' \
            "Dir::Etc::SourceList \"$apt/sources.list\";" \
            "Dir::Etc::SourceParts \"$apt/parts\";" \
            "Dir::Etc::Preferences \"$apt/preferences\";" \
            "Dir::Etc::PreferencesParts \"$apt/parts\";" \
            "Dir::State \"$apt\";" \
            "Dir::State::Lists \"$apt/lists\";" \
            "Dir::State::status \"$apt/status\";" \
            "Dir::Cache \"$apt/cache\";"
        if [ -n "$arch" ]; then
            printf '%s\n' "APT::Architecture \"$arch\";" "APT::Architectures { \"$arch\"; };"
        fi
        echo 'APT::Sandbox::User "root";'
    } >"$apt/apt.conf"
}

# trixie_backports_apt DIR: private_apt for arm64 packages from trixie-backports (Debian's Linux
# and its source package).
trixie_backports_apt() {
    private_apt "$1" arm64 trixie-backports
}

# install_qemu: QEMU for the kernel's runs, as root: qemu-system-arm from bookworm-backports
# (QEMU 10.0: a 1 GHz counter, and the AST2700 and Raspberry Pi 4B machines the board tests
# boot), the backports suite on the host's own mirror added to the host's apt sources when it
# is not there; bookworm's own QEMU (7.2, without those machines) if that fails.
install_qemu() {
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        echo "deb $(host_mirror) bookworm-backports main" >/etc/apt/sources.list.d/svelt-backports.list
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -t bookworm-backports qemu-system-arm ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-arm
}
