# Sourced by qemu-run.sh, .ci/run and tests/selftests/build.sh: the Debian mirror the host's own
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
