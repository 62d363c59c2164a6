#!/usr/bin/env bash
# Downloads the real Qwen2.5-0.5B-Instruct into models/Qwen2.5-0.5B-Instruct.
#
# UNTESTED HERE: Lantern is developed on machines without internet access, so
# this script has never been run by its authors. Everything else in Lantern
# works on generated or trained models; this is for readers with a network.
#   bash tools/download_qwen.sh && ./run models/Qwen2.5-0.5B-Instruct "Hello"
set -euo pipefail
cd "$(dirname "$0")/.."
repo=${1:-Qwen/Qwen2.5-0.5B-Instruct}
dir=models/$(basename "$repo")
mkdir -p "$dir"
for f in config.json generation_config.json tokenizer.json tokenizer_config.json model.safetensors; do
    if [ ! -s "$dir/$f" ]; then
        echo "fetching $f"
        curl -fL --retry 3 -o "$dir/$f.part" "https://huggingface.co/$repo/resolve/main/$f"
        mv "$dir/$f.part" "$dir/$f"
    fi
done
./run info "$dir" | tail -6
