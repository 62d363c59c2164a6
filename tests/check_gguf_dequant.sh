#!/usr/bin/env bash
# The dequantization itself, exactly: with --kernels plain (f32 activations,
# double sums), Lantern on a quantized GGUF equals the float64 PyTorch
# reference run over the same weights dequantized (./run convert --type f32
# unpacks every block with the same definition; tools/gguf_to_folder.py reads
# that file independently of the C++ reader). A wrong nibble, scale or sign
# moves logits by the size of a weight step, far above the 1e-4 tolerance.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build/gguf_dequant
mkdir -p $work
[ -f $work/k256/model.safetensors ] && [ $work/k256/model.safetensors -nt build/gen_model ] ||
    build/gen_model --preset tiny --dtype f32 --hidden 256 --intermediate 512 --layers 2 --heads 4 --kv-heads 2 --seed 7 --out $work/k256 >/dev/null
ids=9707,11,1879,0,576,1052,13,198
fails=0
for t in q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m; do
    q=$work/k256-$t.gguf
    ./run convert $work/k256 $q --type $t 2>/dev/null
    ./run convert $q $work/deq.gguf --type f32 2>/dev/null
    /usr/bin/python3 tools/gguf_to_folder.py $work/deq.gguf $work/deq
    /usr/bin/python3 tools/qwen2_torch.py $work/deq --tokens $ids --out $work/ref.bin >/dev/null
    ./run fwd $q --tokens $ids --all --kernels plain --dump $work/lantern.bin >/dev/null 2>&1
    if /usr/bin/python3 - $work $t <<'PY'
import sys, numpy as np
w, t = sys.argv[1], sys.argv[2]
ref = np.fromfile(f"{w}/ref.bin", dtype=np.float32).astype(np.float64)
got = np.fromfile(f"{w}/lantern.bin", dtype=np.float32).astype(np.float64)
err = np.abs(ref - got).max() / np.abs(ref).max()
print(f"{'ok  ' if err < 1e-4 else 'FAIL'} {t:7s} Lantern --kernels plain vs float64 reference on the dequantized weights: max error {err:.2e} of the largest logit")
sys.exit(0 if err < 1e-4 else 1)
PY
    then :; else fails=$((fails + 1)); fi
done
[ $fails = 0 ] && echo "check_gguf_dequant: all types equal the float64 reference"
exit $fails
