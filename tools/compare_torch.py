#!/usr/bin/python3
"""Compare Lantern's logits with the PyTorch reference (tools/qwen2_torch.py).

For each case, runs `./run fwd MODEL --tokens ... --pos P --dump FILE` and the
reference forward in float64 on the same folder, then checks

    max |lantern - reference|  <=  tol * std(reference logits)

Why a bound relative to the spread of the logits: what matters for sampling is
the logits' differences, whose scale is their standard deviation; an absolute
bound would be too loose for a small-logit model and too tight for a large one.
Why 1e-4: the engine computes in float32 (about 7 significant digits); each of
the ~10 float32 roundings per layer perturbs activations by ~1e-7 relative,
and sums over hundreds of terms grow that like sqrt(n). A few layers of this
stay near 1e-6..1e-5 of the logit spread; 1e-4 leaves headroom for deeper
models and long sequences while any real bug (a wrong RoPE pairing, a dropped
bias, a misplaced norm) moves logits by a sizable fraction of their spread,
i.e. by 1e-2 or more.

The models: Qwen2 in two shapes and both weight types, Qwen3 (QK-norm, no
biases, head_dim stated apart from hidden/heads), and a sharded folder with an
untied LM head. For the float32 models, greedy continuations must also be
identical: a run of 8 argmax tokens by `./run --raw -t 0` and by the reference.

Usage:  /usr/bin/python3 tools/compare_torch.py [--kernels plain|fast] [--tol 1e-4] [--quick] [--binary ./run]
                                                [--models DIR,DIR] [--tokens-below N]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2_torch  # noqa: E402


MODELS = ["models/tiny-f32", "models/mha-f32", "models/tiny", "models/mha",
          "models/qwen3-tiny-f32", "models/qwen3-tiny", "models/tiny-untied-sharded"]


def cases(models, quick, hi):
    rng = random.Random(7)
    seq = lambda n: [rng.randrange(hi) for _ in range(n)]
    out = []
    for model in models:
        out.append((model, seq(1), 0, "1 token"))
        out.append((model, seq(10), 0, "10 tokens"))
        if not quick:
            with open(os.path.join(model, "config.json")) as f:
                far = json.load(f)["max_position_embeddings"] - 600   # far into the RoPE range
            out.append((model, seq(300), far, "300 tokens at positions %d.." % far))
    return out


def greedy_check(binary, model, net, kernels, n=8):
    """8 greedy tokens after a raw prompt: Lantern's ids against argmax of the reference,
    which recomputes the whole sequence at every step (no cache to get wrong)."""
    cmd = [binary, model, "The quick brown fox", "--raw", "-t", "0", "--no-gen-config", "-n", str(n), "--json",
           "--kernels", kernels]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit("lantern failed: %s\n%s" % (" ".join(cmd), r.stderr))
    out = json.loads(r.stdout)
    ids, want = list(out["prompt_ids"]), []
    with torch.no_grad():
        for _ in range(len(out["ids"])):
            nxt = int(net(torch.tensor([ids]))[0, -1].argmax())
            want.append(nxt)
            ids.append(nxt)
    return out["ids"], want


def run_lantern(binary, model, tokens, pos, kernels, path):
    cmd = [binary, "fwd", model, "--tokens", ",".join(map(str, tokens)), "--pos", str(pos),
           "--dump", path, "--kernels", kernels]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit("lantern failed: %s\n%s" % (" ".join(cmd), r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="fast")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--quick", action="store_true", help="skip the 300-token cases")
    ap.add_argument("--binary", default="./run", help="the engine to test (a planted-bug build, say)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated model folders")
    ap.add_argument("--tokens-below", type=int, default=151000, help="draw token ids below N")
    a = ap.parse_args()
    torch.set_num_threads(1)
    loaded = {}
    worst, failed = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        models = a.models.split(",")
        for model, tokens, pos, what in cases(models, a.quick, a.tokens_below):
            if model not in loaded:
                loaded[model] = qwen2_torch.load_folder(model, torch.float64)
            net, config = loaded[model]
            V = config["vocab_size"]
            with torch.no_grad():
                ref = net(torch.tensor([tokens]), start_pos=pos)[0].numpy()
            path = os.path.join(tmp, "logits.bin")
            run_lantern(a.binary, model, tokens, pos, a.kernels, path)
            got = np.fromfile(path, dtype="<f4").reshape(len(tokens), V).astype(np.float64)
            diff = np.abs(got - ref).max()
            rel = diff / ref.std()
            same_argmax = (got.argmax(1) == ref.argmax(1)).mean()
            ok = rel <= a.tol
            failed += not ok
            worst = max(worst, rel)
            print("%s %-16s %-28s max|diff| %.3g  std %.3g  ratio %.2e  argmax agree %.0f%%"
                  % ("ok  " if ok else "FAIL", model, what, diff, ref.std(), rel, 100 * same_argmax))
        for model in models:
            if loaded[model][1].get("torch_dtype") != "float32":
                continue   # bf16 weights: logits are compared above; ties may break differently
            got, want = greedy_check(a.binary, model, loaded[model][0], a.kernels)
            ok = got == want and len(got) > 0
            failed += not ok
            print("%s %-16s greedy, %d tokens: %s" % ("ok  " if ok else "FAIL", model, len(got),
                                                       "identical" if ok else "%s vs %s" % (got, want)))
    print("worst ratio %.2e (tolerance %.0e), kernels %s" % (worst, a.tol, a.kernels))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
