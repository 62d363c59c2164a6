#!/usr/bin/env bash
# The trained default model (trained/kjv) works in the engine:
#  (a) Lantern's logits equal the PyTorch module's (tools/qwen2_torch.py, float64, on the same
#      BF16 weights) on several sequences: max|diff| <= 1e-4 x std(reference logits);
#  (b) Lantern's tokenizer encodes text exactly as Hugging Face's tokenizers (npm) does with
#      the trained tokenizer.json, special tokens included;
#  (c) a greedy and a sampled continuation of a fixed prompt are readable -- at least 90% of
#      their words occur in the corpus word list (trained/kjv/words.txt) -- and differ.
# It does not pin the weights' exact values, so retraining the model keeps it passing as long
# as the model still writes English.
set -euo pipefail
cd "$(dirname "$0")/.."
M=trained/kjv
[ -x ./run ] || { echo "no ./run; build first (make)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== (a) logits against the PyTorch reference"
/usr/bin/python3 - "$M" "$tmp" <<'EOF'
import os, random, subprocess, sys
import numpy as np, torch
sys.path.insert(0, "tools")
import qwen2_torch
model_dir, tmp = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
net, cfg = qwen2_torch.load_folder(model_dir, torch.float64)
V, ctx = cfg["vocab_size"], cfg["max_position_embeddings"]
rng = random.Random(10)
im_start, im_end = V - 2, V - 1
cases = [
    ([1153, 258, 2063, 387, 3592, 258, 735, 267, 258, 622, 278], 0, "a verse opening"),
    ([im_start] + [rng.randrange(V - 3) for _ in range(8)] + [im_end, 198, im_start], 0, "ChatML ids"),
    ([rng.randrange(V) for _ in range(1)], 0, "1 token"),
    ([rng.randrange(V) for _ in range(60)], 150, "60 tokens at positions 150.."),
    ([rng.randrange(V) for _ in range(ctx)], 0, "%d tokens (the whole context)" % ctx),
]
worst, bad = 0.0, 0
for tokens, pos, what in cases:
    path = os.path.join(tmp, "logits.bin")
    cmd = ["./run", "fwd", model_dir, "--tokens", ",".join(map(str, tokens)), "--pos", str(pos),
           "--dump", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    got = np.fromfile(path, dtype="<f4").reshape(len(tokens), V).astype(np.float64)
    with torch.no_grad():
        ref = net(torch.tensor([tokens]), start_pos=pos)[0].numpy()
    ratio = np.abs(got - ref).max() / ref.std()
    agree = (got.argmax(1) == ref.argmax(1)).mean()
    worst = max(worst, ratio)
    ok = ratio <= 1e-4
    bad += not ok
    print("%s %-32s max|diff|/std %.2e  argmax agree %.0f%%" % ("ok  " if ok else "FAIL", what, ratio, 100 * agree))
print("worst %.2e (tolerance 1e-4)" % worst)
sys.exit(1 if bad else 0)
EOF

echo "== (b) Lantern's tokenizer against Hugging Face's on the trained tokenizer.json"
texts=("In the beginning God created the heaven and the earth.
And the earth was without form, and void;"
       "<|im_start|>user
And God said<|im_end|>
<|im_start|>assistant
"
       "Thou shalt not  ... 3:16 naïve ‘quoted’ LORD's   end")
for t in "${texts[@]}"; do
    mine=$(./run encode "$M" "$t" | tr -s ' ,[]\n' ' ' | sed 's/^ //; s/ $//')
    ref=$(T="$t" node -e '
        const {Tokenizer} = require("./tools/node_modules/tokenizers");
        Tokenizer.fromFile(process.argv[1]).encode(process.env.T)
          .then((e) => console.log(e.getIds().join(" ")));' "$M/tokenizer.json")
    if [ "$mine" != "$ref" ]; then
        echo "FAIL tokenizer differs on: $t"; echo "  lantern: $mine"; echo "  hf:      $ref"; exit 1
    fi
    echo "ok   $(echo "$ref" | wc -w) tokens: $(printf '%s' "$t" | head -1)"
done

echo "== (c) readable continuations"
prompt="And God said"
./run "$M" "$prompt" --raw -n 64 -t 0 > "$tmp/greedy.txt"
./run "$M" "$prompt" --raw -n 64 -t 0.8 -s 7 > "$tmp/sampled.txt"
/usr/bin/python3 - "$M/words.txt" "$tmp/greedy.txt" "$tmp/sampled.txt" <<'EOF'
import re, sys
words = set(open(sys.argv[1]).read().split())
texts = [open(p).read() for p in sys.argv[2:]]
bad = 0
for name, text in zip(["greedy", "sampled"], texts):
    ws = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    known = sum(w in words for w in ws)
    frac = known / max(len(ws), 1)
    ok = len(ws) >= 20 and frac >= 0.9
    bad += not ok
    print("%s %-8s %d words, %.0f%% in the corpus word list: %r"
          % ("ok  " if ok else "FAIL", name, len(ws), 100 * frac, text[:160]))
if texts[0] == texts[1]:
    print("FAIL the sampled continuation equals the greedy one")
    bad += 1
sys.exit(1 if bad else 0)
EOF
echo "all checks passed"
