#!/usr/bin/env bash
# Bad input on the command line: one line on stderr starting "error:" that
# names the file or flag, a non-zero exit, and never a crash (exit >= 128).
set -uo pipefail
cd "$(dirname "$0")/.."
t=build/cli_errors; rm -rf $t; mkdir -p $t
fails=0
expect_error() {  # pattern, command...
    local pattern=$1; shift
    "$@" >$t/out 2>$t/err; local rc=$?
    local lines; lines=$(grep -c "^error:" $t/err)
    if [ $rc -eq 0 ] || [ $rc -ge 128 ] || [ "$lines" != 1 ] || ! grep -q -- "$pattern" $t/err; then
        echo "FAIL: $* -> rc=$rc, stderr:"; cat $t/err; fails=$((fails+1))
    else
        echo "ok: $* -> $(grep '^error:' $t/err)"
    fi
}
cp -r models/tiny-f32 $t/m
head -c 1000 models/tiny-f32/model.safetensors > $t/truncated.safetensors
cp models/tiny-f32/config.json $t/config.json
expect_error "truncated.safetensors" ./run info $t/truncated.safetensors
expect_error "does-not-exist: no such model folder or file" ./run info $t/does-not-exist
printf '{"hidden_size": 64' > $t/m/config.json
expect_error "config.json: invalid JSON" ./run info $t/m
expect_error "config.json: invalid JSON" ./run fwd $t/m 1 0
expect_error "outside the vocabulary" ./run fwd models/tiny 999999 0
expect_error "\-\-tokens" ./run fwd models/tiny --tokens 1,x,3
expect_error "\-\-kernels" ./run fwd models/tiny 1 0 --kernels turbo
expect_error "context full" ./run fwd models/tiny --tokens 1,2,3 --pos 4094 --ctx 4096
expect_error "unknown flag \"--bogus\" for ./run fwd" ./run fwd models/tiny 1 0 --bogus
# A folder without tokenizer.json, and a directory where a file is expected.
mkdir -p $t/notok $t/dirs/config.json $t/tokdir/tokenizer.json
cp models/tiny/config.json models/tiny/model.safetensors $t/notok/
cp models/tiny/config.json models/tiny/model.safetensors $t/tokdir/
expect_error "notok/tokenizer.json: not found" ./run $t/notok "hi"
expect_error "notok/tokenizer.json: not found" ./run encode $t/notok "hi"
expect_error "models/tokenizer.json: not found" ./run decode models 1
expect_error "tokdir/tokenizer.json: is a directory" ./run $t/tokdir "hi"
expect_error "config.json: is a directory" ./run info $t/dirs
expect_error "\-\-quant: \"iq2_xs\" is not one of" ./run bench models/tiny --quant file,iq2_xs
[ $fails = 0 ]
