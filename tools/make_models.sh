#!/usr/bin/env bash
# Generates the random-weight test models under models/ (git-ignored) unless
# they are already there and newer than the generator.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=build/gen_model
make_one() {  # name, args...
    local dir=models/$1; shift
    if [ ! -f "$dir/model.safetensors" ] || [ "$gen" -nt "$dir/model.safetensors" ]; then
        "$gen" --out "$dir" "$@"
    fi
}
make_one tiny --preset tiny
make_one tiny-f32 --preset tiny --dtype f32
make_one mha --preset mha
make_one mha-f32 --preset mha --dtype f32
if [ "${LANTERN_BIG_MODEL:-0}" = 1 ]; then make_one qwen2.5-0.5b --preset qwen2.5-0.5b; fi
