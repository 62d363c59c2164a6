#!/usr/bin/python3
"""Bisect a wrong forward pass: compare Lantern's -vv tensor trace with the PyTorch reference,
tensor by tensor, layer by layer, and name the first one that differs.

    /usr/bin/python3 tools/trace_diff.py MODEL --tokens 1,2,3 [--pos P] [--binary ./run]
                                         [--kernels plain] [--tol 5e-3] [--brief]

Lantern side: `BINARY fwd MODEL --tokens ... --pos P --all --top 1 --kernels K -vv`. With -vv the
engine prints one summary line per intermediate tensor (logging.cpp:print_tensor): its name
(L3.attn.q is layer 3's query projection), its shape, min, max, mean, rms and first four numbers.

Reference side: tools/qwen2_torch.py in float64 on the same folder, with hooks that capture
the same intermediates under the same names (the query after RoPE, the attention weights,
the input of o_proj, ...), summarized the same way.

For each tensor, the error is the largest difference among the summary numbers, divided by the
reference's rms. The engine prints 4 significant digits, so a correct tensor shows errors of
1e-4..1e-3; the default tolerance is 5e-3. Real bugs are 1e-2 and far above. Exit status 0 when
every tensor agrees, 1 when one differs (the first one is marked), 2 when a side failed to run.
"""
import argparse
import math
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2_torch  # noqa: E402

TRACE = re.compile(r"^\[T\s*\w*\s*\]\s+(\S+)\s+\[(\d+),\s*(\d+)\]\s+(.*?)\s+min\s+(\S+)\s+max\s+(\S+)"
                   r"\s+mean\s+(\S+)\s+rms\s+(\S+)\s+(?:first\s+)?\[([^\]]*)\]")


def lantern_trace(a):
    cmd = [a.binary, "fwd", a.model, "--tokens", a.tokens, "--pos", str(a.pos), "--all", "--top", "1",
           "--kernels", a.kernels, "-vv"]
    env = dict(os.environ, NO_COLOR="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print("trace_diff: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
        sys.exit(2)
    out = []
    for line in r.stderr.split("\n"):
        m = TRACE.match(line)
        if m:
            first = [float(v) for v in m.group(9).split()]
            out.append({"name": m.group(1), "shape": (int(m.group(2)), int(m.group(3))),
                        "min": float(m.group(5)), "max": float(m.group(6)), "mean": float(m.group(7)),
                        "rms": float(m.group(8)), "first": first})
    if not out:
        print("trace_diff: no -vv tensor lines in the output of %s" % " ".join(cmd))
        sys.exit(2)
    return out


def summary(t):
    t = t.reshape(-1).to(torch.float64)
    return {"min": t.min().item(), "max": t.max().item(), "mean": t.mean().item(),
            "rms": math.sqrt((t * t).mean().item()), "first": t[:4].tolist(), "n": t.numel()}


class _Functional:
    """Stands in for torch.nn.functional inside qwen2_torch, to catch attention's softmax."""

    def __init__(self, record):
        self._record = record

    def softmax(self, x, dim=None, **kw):
        y = torch.nn.functional.softmax(x, dim=dim, **kw)
        self._record("attn.scores", y[0])                        # [H, T, T]
        return y

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)


def reference_trace(a, tokens):
    net, config = qwen2_torch.load_folder(a.model, torch.float64)
    got, layer = {}, [-1]

    def record(name, t):
        key = name if layer[0] < 0 or name in ("embed", "final_norm", "logits") else "L%d.%s" % (layer[0], name)
        got[key] = summary(t.detach())

    def out_hook(name, to_rows=None):
        return lambda mod, inp, out: record(name, out if to_rows is None else to_rows(out))

    def in_hook(name):
        return lambda mod, inp: record(name, inp[0])

    m = net.model
    m.embed_tokens.register_forward_hook(out_hook("embed"))
    for i, L in enumerate(m.layers):
        L.register_forward_pre_hook(lambda mod, inp, i=i: layer.__setitem__(0, i))
        L.input_layernorm.register_forward_hook(out_hook("attn_norm"))
        L.self_attn.q_proj.register_forward_hook(out_hook("attn.q"))
        L.self_attn.k_proj.register_forward_hook(out_hook("attn.k"))
        L.self_attn.v_proj.register_forward_hook(out_hook("attn.v"))
        L.self_attn.o_proj.register_forward_pre_hook(in_hook("attn.out"))
        L.self_attn.o_proj.register_forward_hook(out_hook("attn.o_proj"))
        L.post_attention_layernorm.register_forward_hook(out_hook("ffn_norm"))
        L.mlp.gate_proj.register_forward_hook(out_hook("mlp.gate"))
        L.mlp.up_proj.register_forward_hook(out_hook("mlp.up"))
        L.mlp.down_proj.register_forward_pre_hook(in_hook("mlp.act"))
        L.mlp.down_proj.register_forward_hook(out_hook("mlp.down"))
        L.register_forward_hook(out_hook("resid"))
    def final_norm_hook(mod, inp, out):   # a hook that returns something replaces the output
        layer[0] = -1
        record("final_norm", out)

    m.norm.register_forward_hook(final_norm_hook)

    # RoPE is a function, not a module: wrap it. It is called for q, then for k, in each layer.
    rope, calls = qwen2_torch.apply_rope, [0]

    def traced_rope(x, cos, sin):
        y = rope(x, cos, sin)
        B, H, T, hd = y.shape
        record("attn.q_rope" if calls[0] % 2 == 0 else "attn.k_rope", y[0].transpose(0, 1).reshape(T, H * hd))
        calls[0] += 1
        return y

    qwen2_torch.apply_rope = traced_rope
    qwen2_torch.F = _Functional(record)
    with torch.no_grad():
        logits = net(torch.tensor([tokens]), start_pos=a.pos)
    record("logits", logits[0])
    return got


def main():
    ap = argparse.ArgumentParser(description="Compare Lantern's -vv trace with the PyTorch reference.")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--pos", type=int, default=0, help="position of the first token")
    ap.add_argument("--binary", default="./run", help="the engine to test (a planted-bug build, say)")
    ap.add_argument("--kernels", default="plain", help="plain (default), scalar or fast")
    ap.add_argument("--tol", type=float, default=5e-3, help="largest error / reference rms that passes")
    ap.add_argument("--brief", action="store_true", help="print only the tensors around the first difference")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tokens = [int(t) for t in a.tokens.split(",")]
    mine = lantern_trace(a)
    ref = reference_trace(a, tokens)

    rows, first_bad, worst = [], None, 0.0
    for k, e in enumerate(mine):
        r = ref.get(e["name"])
        if r is None:
            rows.append((e["name"], e["shape"], e["rms"], None, None, "no reference"))
            continue
        diffs = [abs(e[s] - r[s]) for s in ("min", "max", "mean", "rms")]
        # "first" is the start of the first row: min(4, cols) numbers (the rest printed as 0)
        n_first = min(4, e["shape"][1])
        diffs += [abs(x - y) for x, y in zip(e["first"][:n_first], r["first"][:n_first])]
        err = max(diffs) / max(r["rms"], 1e-30)
        ok = err <= a.tol and e["shape"][0] * e["shape"][1] == r["n"]
        worst = max(worst, err)
        if not ok and first_bad is None:
            first_bad = len(rows)
        rows.append((e["name"], e["shape"], e["rms"], r["rms"], err, "ok" if ok else "DIFFERS"))

    print("%-16s %-13s %11s %11s %10s" % ("tensor", "shape", "lantern rms", "torch rms", "error"))
    show = range(len(rows))
    if a.brief and first_bad is not None:
        show = range(max(0, first_bad - 2), min(len(rows), first_bad + 3))
    elif a.brief:
        show = []
    for i in show:
        name, shape, lr, tr, err, status = rows[i]
        mark = "   <- first difference" if i == first_bad else ""
        print("%-16s %-13s %11.4g %11s %10s  %s%s" % (name, "[%d, %d]" % shape, lr,
              "-" if tr is None else "%.4g" % tr, "-" if err is None else "%.1e" % err, status, mark))
    compared = sum(1 for r in rows if r[4] is not None)
    if first_bad is None:
        print("all %d tensors agree with the reference (worst error %.1e, tolerance %.0e)" % (compared, worst, a.tol))
        return 0
    bad = sum(1 for r in rows if r[5] == "DIFFERS")
    print("%d of %d tensors differ; the first is %s" % (bad, compared, rows[first_bad][0]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
