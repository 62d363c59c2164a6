#!/usr/bin/env bash
# Generates the random-weight test models under models/ (git-ignored) unless
# they are already there and newer than the generator.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=build/gen_model
# The models carry the real Qwen tokenizer, which `make deps` fetches; on a
# fresh clone `make models` fetches it first rather than make models that
# cannot tokenize.
if [ ! -f models/qwen-tokenizer/tokenizer.json ]; then
    echo "make_models: models/qwen-tokenizer/tokenizer.json is missing; running tools/install_deps.sh run first"
    bash tools/install_deps.sh run
fi
make_one() {  # name, args...
    local dir=models/$1; shift
    if [ ! -f "$dir/model.safetensors" ] || [ "$gen" -nt "$dir/model.safetensors" ]; then
        mkdir -p "$dir"
        "$gen" --out "$dir" "$@"
    fi
}
make_one tiny --preset tiny
make_one tiny-f32 --preset tiny --dtype f32
make_one mha --preset mha
make_one mha-f32 --preset mha --dtype f32
if [ "${LANTERN_BIG_MODEL:-0}" = 1 ]; then make_one qwen2.5-0.5b --preset qwen2.5-0.5b; fi
# The Qwen family beyond one file: Qwen3 (QK-norm, head_dim 32 != 64/4) and a
# sharded folder with an untied head (its index stands for the whole folder).
make_one qwen3-tiny --preset qwen3-tiny
make_one qwen3-tiny-f32 --preset qwen3-tiny --dtype f32
if [ ! -f models/tiny-untied-sharded/model.safetensors.index.json ] || [ "$gen" -nt models/tiny-untied-sharded/config.json ]; then
    "$gen" --out models/tiny-untied-sharded --preset tiny --untied --shards 3 --dtype f32
fi
