#!/usr/bin/env bash
# web/fetch_libs.sh OUT — the sources of utf8proc and PCRE2 for the browser build.
#
# Debian has no WebAssembly build of either library, so the web build
# compiles them itself, from Debian's own source packages at exactly the
# versions the native build links (dpkg-query says which): the tokenizer in
# the page then normalizes and splits with the same code as ./run. The
# packages come through a private apt configuration that lives under OUT:
# its own deb-src list, package lists and cache, so the machine's apt
# sources and state are never touched (and a machine without deb-src lines
# works). apt checks the .dsc against the archive's signed Release file;
# this script also checks every file the .dsc names against its SHA-256
# before unpacking. Prints the two unpacked source folders.
set -euo pipefail
out=${1:?usage: web/fetch_libs.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The native architecture's package: with the arm64 libraries beside them
# (make deps, for the ARM check) a bare name would answer both versions.
version() { dpkg-query -W -f='${Version}' "$1:$(dpkg --print-architecture)" 2>/dev/null || true; }
utf8proc_v=$(version libutf8proc-dev)
pcre2_v=$(version libpcre2-dev)
[ -n "$utf8proc_v" ] && [ -n "$pcre2_v" ] ||
    { echo "web: libutf8proc-dev and libpcre2-dev must be installed (make deps-run): their versions are the ones built" >&2; exit 1; }

# Already unpacked (for this upstream release): nothing to do.
utf8proc_dir="$out/utf8proc-${utf8proc_v%%-*}"
pcre2_dir="$out/pcre2-${pcre2_v%%-*}"
if [ -f "$utf8proc_dir/.lantern-source" ] && [ -f "$pcre2_dir/.lantern-source" ]; then
    echo "$utf8proc_dir $pcre2_dir"
    exit 0
fi

apt_dir="$out/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
. /etc/os-release
suite=${VERSION_CODENAME:-bookworm}
cat >"$apt_dir/sources.list" <<EOF
deb-src [signed-by=$keyring] http://deb.debian.org/debian $suite main
deb-src [signed-by=$keyring] http://deb.debian.org/debian $suite-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security $suite-security main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "Dir::State::status=/var/lib/dpkg/status"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
echo "web: fetching the source packages utf8proc $utf8proc_v and pcre2 $pcre2_v (apt-get source, private lists in $apt_dir)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
# The exact version first. A mirror may lack a security update's source
# (its binary installed, its .dsc not served): then the newest source of
# the same upstream release, which the message names.
fetch_source() {  # NAME VERSION -> the version fetched
    local v
    for v in "$2" $(apt-cache "${apt_opts[@]}" showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | uniq); do
        [ "$v" = "$2" ] || [ "${v%-*}" = "${2%-*}" ] || continue
        if (cd "$out" && apt-get "${apt_opts[@]}" -qq source --download-only "$1=$v" >&2 2>/dev/null); then
            [ "$v" = "$2" ] || echo "web: the source of $1 $2 is not served here; built $v, the same upstream release" >&2
            echo "$v"
            return
        fi
    done
    echo "web: no source package of $1 ${2%-*} could be fetched" >&2
    exit 1
}
utf8proc_v=$(fetch_source utf8proc "$utf8proc_v")
pcre2_v=$(fetch_source pcre2 "$pcre2_v")

# Every file the .dsc lists, checked against its SHA-256 there.
check_dsc() {
    local dsc=$1 n=0
    while read -r sum size name; do
        [ -f "$out/$name" ] || { echo "web: $name, named by $(basename "$dsc"), is missing" >&2; exit 1; }
        echo "$sum  $out/$name" | sha256sum -c --quiet - >&2 ||
            { echo "web: $name does not match the SHA-256 in $(basename "$dsc")" >&2; exit 1; }
        n=$((n + 1))
    done < <(awk '/^Checksums-Sha256:/ {on = 1; next} /^[^ ]/ {on = 0} on && NF == 3 {print}' "$dsc")
    [ "$n" -gt 0 ] || { echo "web: $(basename "$dsc") lists no SHA-256 checksums" >&2; exit 1; }
    echo "web: $(basename "$dsc"): $n files match their SHA-256" >&2
}
unpack() {  # NAME VERSION DIR
    local dsc="$out/${1}_${2#*:}.dsc"
    [ -f "$dsc" ] || { echo "web: apt-get source left no $(basename "$dsc")" >&2; exit 1; }
    check_dsc "$dsc"
    rm -rf "$3"
    dpkg-source --no-check -x "$dsc" "$3" >&2  # checked above; Debian's patches are applied, as in the native library
    echo "$1 $2" >"$3/.lantern-source"
}
unpack utf8proc "$utf8proc_v" "$utf8proc_dir"
unpack pcre2 "$pcre2_v" "$pcre2_dir"
echo "$utf8proc_dir $pcre2_dir"
