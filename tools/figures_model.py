#!/usr/bin/python3
"""tools/figures.py's figures of the model: q, k and v as matrices, chapter 6's scores, RoPE's
pairs, the load sequence, trace_diff's first difference, the family table, the reading paths."""
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_draw import (MODEL, ROOT, Svg, arrow, box, chapter_has, diverge, heat, need,  # noqa: E402
                          pieces, run, shown, source, tr, wrap, cols)
import figures_draw  # noqa: E402

# ----------------------------------------------------------------------------- q, k, v and the heads

QKV_TEXT = "In the beginning God created"


def qkv_tensors():
    """Layer 0 of the reference model on QKV_TEXT: its normed input, q, k, v (before RoPE), the
    heads' outputs (o_proj's input) and o_proj's output, each [T, width]; the config; the tokens."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch
    import qwen2_torch as q
    model, cfg = q.load_folder(os.path.join(ROOT, MODEL), torch.float64)
    att = model.model.layers[0].self_attn
    got = {}

    def keep(name, inp=False):
        def hook(mod, args, out):
            got[name] = (args[0] if inp else out)[0].detach().double().numpy()
        return hook
    hooks = [att.q_proj.register_forward_hook(keep("h", inp=True)), att.q_proj.register_forward_hook(keep("q")),
             att.k_proj.register_forward_hook(keep("k")), att.v_proj.register_forward_hook(keep("v")),
             att.o_proj.register_forward_hook(keep("att", inp=True)), att.o_proj.register_forward_hook(keep("o"))]
    toks = pieces(QKV_TEXT)
    with torch.no_grad():
        model(torch.tensor([[t[0] for t in toks]]))
    for h in hooks:
        h.remove()
    with open(os.path.join(ROOT, MODEL, "config.json")) as f:
        c = json.load(f)
    return got, c, [t[2] for t in toks]


def fig_qkv(out, summary=False):
    got, c, toks = qkv_tensors()
    H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"]
    hd = c.get("head_dim") or D // H
    T = len(toks)
    if summary:
        print("%s layer 0, %d tokens: %s" % (MODEL, T, " | ".join(shown(t) for t in toks)))
        print("hidden %d, %d query heads and %d KV heads of %d: q [%d, %d], k and v [%d, %d]"
              % (D, H, KV, hd, T, H * hd, T, KV * hd))
        for n in ("h", "q", "k", "v", "att", "o"):
            m = got[n]
            print("  %-4s [%d, %d]  max |x| %.3f" % (n, len(m), len(m[0]), max(abs(x) for r in m for x in r)))
        return
    cw, rh = 3, 13                          # one column of numbers, one token
    cols = ["#3d72b4", "#d9822b", "#2f8a3a", "#8a5c9f", "#a0641f", "#5c9f9f", "#9f5c7a", "#7a7a3d"]

    def matrix(svg, x, y, m, bands, band_w, label, sub, names=None):
        vmax = max(abs(v) for r in m for v in r) or 1.0
        for t, row in enumerate(m):
            for j, v in enumerate(row):
                svg.rect(x + j * cw, y + t * rh, cw, rh - 1, diverge(v, vmax))
        if bands:
            for b in range(bands):
                svg.rect(x + b * band_w * cw, y - 1, band_w * cw, T * rh + 1, "none", stroke=cols[b % len(cols)],
                         extra=" stroke-width='2'")
                if names:
                    svg.text(x + (b + 0.5) * band_w * cw, y + T * rh + 13, names[b], size=10, anchor="middle",
                             fill=cols[b % len(cols)], weight="bold")
        svg.text(x, y - 20, label, size=12, weight="bold")
        svg.text(x, y - 7, sub, size=10, fill="#555", mono=True)
        return x + len(m[0]) * cw

    group = H // KV
    wq, wk = H * hd * cw, KV * hd * cw
    W = 60 + wq + 30 + wk + 30 + wk + 40
    Hh = 62 + 4 * T * rh + 90 + 92 + 66 + 80
    svg = Svg(W, Hh, tr("q, k and v split into heads and concatenated back"),
              tr("make figures (tools/figures.py qkv: layer 0 of %s, the float64 reference tools/qwen2_torch.py)") % MODEL)
    svg.text(8, 18, tr("One attention layer as matrices: %s, layer 0, on \u201c%s\u201d (%d tokens, one row each)")
             % (MODEL, QKV_TEXT, T), size=13, weight="bold")
    # the input
    x0, y1 = 60, 62
    for t in range(T):
        svg.text(x0 - 6, y1 + t * rh + 10, shown(toks[t]), size=10, anchor="end", mono=True)
    matrix(svg, x0, y1, got["h"], 0, 0, "h = rmsnorm(x)", "[%d, %d]" % (T, D))
    # q, k, v
    y2 = y1 + T * rh + 90
    xq, xk = x0, x0 + wq + 30
    xv = xk + wk + 30
    for xx, w in ((xq, wq), (xk, wk), (xv, wk)):
        arrow(svg, x0 + D * cw / 2, y1 + T * rh + 4, xx + w / 2, y2 - 36)
    matrix(svg, xq, y2, got["q"], H, hd, "q = h\u00b7Wq\u1d40 + bq", tr("[%d, %d] = %d heads \u00d7 %d") % (T, H * hd, H, hd),
           [tr("head %d") % h for h in range(H)])
    matrix(svg, xk, y2, got["k"], KV, hd, "k = h\u00b7Wk\u1d40 + bk", "[%d, %d] = %d \u00d7 %d" % (T, KV * hd, KV, hd),
           [tr("kv %d") % g for g in range(KV)])
    matrix(svg, xv, y2, got["v"], KV, hd, "v = h\u00b7Wv\u1d40 + bv", "[%d, %d]" % (T, KV * hd),
           [tr("kv %d") % g for g in range(KV)])
    # one attention per head
    y3 = y2 + T * rh + 92
    hw = hd * cw
    gap = (wq + 30 + 2 * wk + 30 - H * hw) / max(1, H - 1) if H > 1 else 0
    gap = min(gap, 40)
    for h in range(H):
        g = h // group
        xh = x0 + h * (hw + gap)
        svg.line(xq + (h + 0.5) * hw, y2 + T * rh + 17, xh + hw / 2, y3 - 34, cols[h % len(cols)], 1.2)
        svg.line(xk + (g + 0.5) * hw, y2 + T * rh + 17, xh + hw / 2, y3 - 34, "#bbb", 0.8)
        svg.line(xv + (g + 0.5) * hw, y2 + T * rh + 17, xh + hw / 2, y3 - 34, "#bbb", 0.8)
        sub = [r[h * hd:(h + 1) * hd] for r in got["att"]]
        vmax = max(abs(v) for r in got["att"] for v in r)
        for t, row in enumerate(sub):
            for j, v in enumerate(row):
                svg.rect(xh + j * cw, y3 + t * rh, cw, rh - 1, diverge(v, vmax))
        svg.rect(xh, y3 - 1, hw, T * rh + 1, "none", stroke=cols[h % len(cols)], extra=" stroke-width='2'")
        svg.text(xh + hw / 2, y3 - 20, tr("head %d") % h, size=11, anchor="middle", weight="bold", fill=cols[h % len(cols)])
        svg.text(xh + hw / 2, y3 - 7, tr("kv %d") % g, size=10, anchor="middle", fill="#555")
    svg.text(x0, y3 + T * rh + 16, tr("each head: softmax(q_h\u00b7k_g\u1d40 / \u221a%d, causal) \u00b7 v_g, with g = h / %d: [%d, %d]")
             % (hd, group, T, hd), size=11, fill="#555")
    # concatenated and mixed
    y4 = y3 + T * rh + 66
    arrow(svg, x0 + wq / 2, y3 + T * rh + 22, x0 + wq / 2, y4 - 34)
    end = matrix(svg, x0, y4, got["att"], H, hd, tr("concatenated: the heads side by side"), "[%d, %d]" % (T, H * hd))
    svg.text(end + 18, y4 + T * rh / 2 + 4, "\u00b7 Wo\u1d40 \u2192", size=13)
    matrix(svg, end + 80, y4, got["o"], 0, 0, tr("o_proj: added to the residual stream"), "[%d, %d]" % (T, D))
    svg.text(8, Hh - 24, tr("one small square per number: red positive, blue negative, white near 0 (each matrix on its own scale)"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-qkv.svg"))


# ----------------------------------------------------------------------------- chapter 6's scores

def fig_scores(out, summary=False):
    """Chapter 6's worked example, one head of width 4: the scores and the causal softmax."""
    q = (2, 0, 0, 0)
    keys = [(1, 0, 0, 0), (0, 1, 0, 0), (1, 0, 1, 0)]
    d = len(q)
    s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d) for k in keys]
    W_ = []
    for t in range(len(keys)):
        e = [math.exp(x - max(s[:t + 1])) for x in s[:t + 1]]
        W_.append([x / sum(e) for x in e] + [None] * (len(keys) - t - 1))
    numbers = ["%.4f" % w for row in W_ for w in row if w is not None and 0 < w < 1]
    chapter_has("book/06-attention-kv-cache.md", numbers, "scores")
    if summary:
        print("scores q.k/sqrt(%d): %s" % (d, ", ".join("%g" % x for x in s)))
        for t, row in enumerate(W_):
            print("token %d: %s" % (t, "  ".join("-" if w is None else "%.4f" % w for w in row)))
        return
    n, cell = len(keys), 76
    W, H = 2 * (n * cell) + 320, n * cell + 130
    svg = Svg(W, H, tr("The causal score matrix"), tr("make figures (tools/figures.py scores: chapter 6's worked example)"))
    svg.text(8, 18, tr("Chapter 6's three tokens, one head of width %d: every query q = (2, 0, 0, 0)") % d, size=13, weight="bold")
    for panel in range(2):
        x0, y0 = 90 + panel * (n * cell + 150), 64
        svg.text(x0, y0 - 26, [tr("scores s_j = q\u00b7k_j / \u221a%d") % d, tr("weights = softmax of each row")][panel],
                 size=12, weight="bold")
        for j in range(n):
            svg.text(x0 + (j + 0.5) * cell, y0 - 8, tr("key %d") % j, size=11, anchor="middle")
        for t in range(n):
            if panel == 0:
                svg.text(x0 - 8, y0 + (t + 0.5) * cell + 4, tr("token %d") % t, size=11, anchor="end")
            for j in range(n):
                x, y = x0 + j * cell, y0 + t * cell
                if j > t:
                    svg.rect(x, y, cell - 2, cell - 2, "#eeeeee")
                    svg.text(x + cell / 2, y + cell / 2 + 4, "\u2212\u221e" if panel == 0 else "0", size=12,
                             anchor="middle", fill="#999")
                    continue
                v = s[j] if panel == 0 else W_[t][j]
                fill = diverge(v, 1.0) if panel == 0 else heat(v)
                svg.rect(x, y, cell - 2, cell - 2, fill)
                dark = panel == 1 and v > 0.45
                dark = dark or (panel == 0 and v > 0.5)
                svg.text(x + cell / 2, y + cell / 2 + 5, "%g" % v if panel == 0 else "%.4f" % v, size=13,
                         anchor="middle", mono=True, fill="white" if dark else "#222")
            if panel == 1:
                svg.text(x0 + n * cell + 8, y0 + (t + 0.5) * cell + 4, tr("sum %g") % round(sum(W_[t][:t + 1]), 6),
                         size=11, fill="#555")
        if panel == 0:
            arrow(svg, x0 + n * cell + 20, y0 + n * cell / 2, x0 + n * cell + 120, y0 + n * cell / 2)
            svg.text(x0 + n * cell + 70, y0 + n * cell / 2 - 8, tr("softmax"), size=11, anchor="middle")
            svg.text(x0 + n * cell + 70, y0 + n * cell / 2 + 16, tr("per row"), size=11, anchor="middle")
    svg.text(8, H - 40, tr("grey: a later position, masked (the loop stops at the diagonal); row 1 is (e, 1)/(e+1), row 2 (e, 1, e)/(2e+1)"),
             size=11, fill="#555")
    svg.text(8, H - 24, tr("keys k0 = (1,0,0,0), k1 = (0,1,0,0), k2 = (1,0,1,0): q\u00b7k = 2, 0, 2, divided by \u221a4 = 2"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-scores.svg"))


# ----------------------------------------------------------------------------- rope: the pairs

def rope_rotate(v, pos, theta):
    """kernels.cpp:apply_rope for one head (rotate_half: number i turns with number i + d/2)."""
    d = len(v)
    half = d // 2
    out = list(v)
    for i in range(half):
        a = pos * theta ** (-2.0 * i / d)
        c, s = math.cos(a), math.sin(a)
        out[i] = v[i] * c - v[i + half] * s
        out[i + half] = v[i + half] * c + v[i] * s
    return out


def fig_rope_pairs(out, summary=False):
    # tests/test_book.cpp's vectors ("after RoPE, q.k depends only on the distance"), head_dim 4, theta 10^4
    q0, k0, theta = (0.3, -1.2, 0.7, 0.5), (-0.4, 0.9, 1.1, -0.2), 10000.0
    need(r"q0\[4\] = \{0\.3f, -1\.2f, 0\.7f, 0\.5f\}, k0\[4\] = \{-0\.4f, 0\.9f, 1\.1f, -0\.2f\}",
         source("tests/test_book.cpp"), "tests/test_book.cpp")
    need(r"float a = v\[i\], b = v\[i \+ half\];", source("kernels.cpp"), "kernels.cpp:apply_rope")
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))
    cases = [(5, 3), (2, 0), (5, 4)]
    dots = [dot(rope_rotate(q0, m, theta), rope_rotate(k0, n, theta)) for m, n in cases]
    if summary:
        for (m, n), v in zip(cases, dots):
            print("q at %d, k at %d (distance %d): q.k = %.6f" % (m, n, m - n, v))
        return
    W, H = 900, 550
    svg = Svg(W, H, tr("RoPE: which numbers rotate together"),
              tr("make figures (tools/figures.py rope-pairs: kernels.cpp:apply_rope's pairing, tests/test_book.cpp's vectors)"))
    svg.text(8, 18, tr("Which two numbers of a head turn together: a head of d = 8"), size=13, weight="bold")
    cw, x0 = 46, 250
    pal = ["#3d72b4", "#d9822b", "#2f8a3a", "#8a5c9f"]
    for row, (name, partner, note) in enumerate([
            (tr("rotate_half (Qwen, Lantern)"), lambda i: i + 4, tr("pair i = (i, i + d/2)")),
            (tr("interleaved (the RoFormer paper)"), lambda i: 2 * i + 1, tr("pair i = (2i, 2i + 1)"))]):
        y = 52 + row * 96
        svg.text(x0 - 12, y + 22, name, size=12, anchor="end", weight="bold")
        svg.text(x0 - 12, y + 38, note, size=11, anchor="end", mono=True, fill="#555")
        first = (lambda i: i) if row == 0 else (lambda i: 2 * i)
        for i in range(4):
            a, b = first(i), partner(i)
            for k, idx in enumerate((a, b)):
                svg.rect(x0 + idx * cw, y + 10, cw - 4, 30, pal[i], extra=" fill-opacity='%s'" % ("0.9" if k == 0 else "0.55"))
                svg.text(x0 + idx * cw + cw / 2 - 2, y + 30, "%s%d" % ("ab"[k], i), size=12, anchor="middle", fill="white",
                         weight="bold")
            xa, xb = x0 + a * cw + cw / 2 - 2, x0 + b * cw + cw / 2 - 2
            top = y + 8 - 8 - 5 * (b - a)
            svg.add("<path d='M %.1f %.1f Q %.1f %.1f %.1f %.1f' fill='none' stroke='%s' stroke-width='1.5'/>"
                    % (xa, y + 9, (xa + xb) / 2, top, xb, y + 9, pal[i]))
        for idx in range(8):
            svg.text(x0 + idx * cw + cw / 2 - 2, y + 56, str(idx), size=10, anchor="middle", fill="#777", mono=True)
    svg.text(x0 + 8 * cw + 10, 80, tr("pair i turns by pos \u00b7 \u03b8^(\u22122i/d)"), size=11, fill="#555")
    svg.text(x0 + 8 * cw + 10, 96, tr("same angles, other partners:"), size=11, fill="#555")
    svg.text(x0 + 8 * cw + 10, 112, tr("weights trained for one layout"), size=11, fill="#555")
    svg.text(x0 + 8 * cw + 10, 128, tr("give garbage in the other"), size=11, fill="#555")
    # why the relative angle survives
    y0 = 262
    svg.text(8, y0 - 20, tr("Why only the distance counts: both vectors turn by their own position, the angle between them by the difference"),
             size=13, weight="bold")
    r = 70
    for k, (m, n) in enumerate(cases):
        cx, cy = 140 + k * 290, y0 + r + 30
        svg.add("<circle cx='%.1f' cy='%.1f' r='%d' fill='none' stroke='#ddd'/>" % (cx, cy, r))
        qa = math.atan2(q0[2], q0[0]) + m * 1.0       # pair 0 of d = 4: numbers 0 and 2, 1 rad per position
        ka = math.atan2(k0[2], k0[0]) + n * 1.0
        for ang, col, lab in ((qa, "#b22222", tr("q at %d") % m), (ka, "#21529e", tr("k at %d") % n)):
            x, y = cx + r * math.cos(ang), cy - r * math.sin(ang)
            arrow(svg, cx, cy, x, y, col, 2)
            svg.text(cx + (r + 16) * math.cos(ang), cy - (r + 16) * math.sin(ang) + 4, lab, size=11, anchor="middle", fill=col)
        lo, hi = sorted((qa, ka))
        rr = 26
        svg.add("<path d='M %.1f %.1f A %d %d 0 0 0 %.1f %.1f' fill='none' stroke='#444'/>"
                % (cx + rr * math.cos(lo), cy - rr * math.sin(lo), rr, rr, cx + rr * math.cos(hi), cy - rr * math.sin(hi)))
        svg.text(cx, cy + r + 34, tr("distance %d: q\u00b7k = %.4f") % (m - n, dots[k]), size=12, anchor="middle",
                 weight="bold" if k < 2 else "normal")
        svg.text(cx, cy + r + 50, tr("angle between them %.3f rad") % ((qa - ka) % (2 * math.pi)), size=11, anchor="middle",
                 fill="#555")
    svg.text(8, H - 24, tr("pair 0 of a head of 4 (1 rad per position); q\u00b7k over the whole head, tests/test_book.cpp's q and k: "
             "equal at distance 2, different at 1"), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-rope-pairs.svg"))


# ----------------------------------------------------------------------------- the load sequence

LOAD_STEPS = [   # (call in generate.cpp:engine_load, what it does, a -v log line it prints or None)
    ("kernels_init", "choose the kernel set (-v names it) and the threads", None),
    ("open_model", "config.json, mmap model.safetensors, check, bind tensors", r"loaded \S+: (.*)"),
    ("pack_model", "reorder weights for the tiles (only sets that pack)", None),
    ("open_tokenizer", "tokenizer.json: vocabulary and merges", r"tokenizer: \S+: (.*?)(?:, loaded in .*)?$"),
    ("net_init", "activations and the KV cache", r"KV cache: (.*)"),
]


def fig_load(out, summary=False):
    body = need(r"void engine_load\(.*?\n\}", source("generate.cpp"), "generate.cpp:engine_load").group(0)
    at = [body.find(c + "(") for c, _, _ in LOAD_STEPS]
    if -1 in at or at != sorted(at):
        sys.exit("figures.py load: generate.cpp:engine_load no longer calls %s in this order"
                 % ", ".join(c for c, _, _ in LOAD_STEPS))
    r = subprocess.run(["./run", "fwd", MODEL, "--tokens", "1", "-v", "--threads", "1"], cwd=ROOT,
                       capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    log = r.stderr
    said = []
    for call, what, pat in LOAD_STEPS:
        m = re.search(r"^\[. \w+ *\] " + pat, log, re.M) if pat else None
        said.append(m.group(1).strip() if m else "")
    info = run(["./run", "info", MODEL])
    header = int(need(r"header (\d+) bytes", info, "./run info").group(1))
    size = int(need(r"file\s+(\d+) bytes", info, "./run info").group(1))
    tensors = []
    for line in info.split("\n"):
        m = re.match(r"^(\S+)\s+\w+\s+\[[^\]]*\]\s+(\d+)\s+(\d+)$", line)
        if m:
            tensors.append((m.group(1), int(m.group(2)), int(m.group(3))))
    if summary:
        for (call, what, _), s in zip(LOAD_STEPS, said):
            print("%-15s %s%s" % (call, what, (": " + s) if s else ""))
        print("file %d bytes: 8 + %d header, %d tensors" % (size, header, len(tensors)))
        return
    W, H = 960, 370
    svg = Svg(W, H, tr("The load sequence"), tr("make figures (tools/figures.py load: generate.cpp:engine_load; ./run fwd %s -v; ./run info)") % MODEL)
    svg.text(8, 18, tr("./run %s ...: generate.cpp:engine_load, in order (what -v prints for each)") % MODEL, size=13, weight="bold")
    bw, gap, y = 172, 14, 40
    for k, ((call, what, _), s) in enumerate(zip(LOAD_STEPS, said)):
        x = 10 + k * (bw + gap)
        box(svg, x, y, bw, 80, [call + "()"] + wrap(tr(what), 26), mono_from=99)
        if k + 1 < len(LOAD_STEPS):
            arrow(svg, x + bw + 1, y + 40, x + bw + gap - 1, y + 40)
        for i, p in enumerate(wrap(s or tr("(depends on the machine's kernel set, not shown)"), 27)[:4]):
            svg.text(x + 4, y + 100 + i * 13, p, size=9, mono=True, fill="#555")
    # the file, to scale
    y2, x0, w = 222, 10, W - 20
    svg.text(8, y2 - 24, tr("%s/model.safetensors to scale: %s bytes; open_model maps it and reads only the header")
             % (MODEL, "{:,}".format(size)), size=12, weight="bold")
    X = lambda b: x0 + w * b / size
    groups = []
    for name, nb, off in tensors:
        m = re.match(r"model\.layers\.(\d+)\.", name)
        g = "layer %s" % m.group(1) if m else "embedding" if "embed" in name else "final norm" if name == "model.norm.weight" else name
        if groups and groups[-1][0] == g:
            groups[-1][2] = off + nb
        else:
            groups.append([g, off, off + nb])
    pal = {"embedding": "#3d72b4", "final norm": "#2f8a3a"}
    svg.rect(X(0), y2, max(2, X(8 + header) - X(0)), 34, "#d9822b")
    for k, (g, a, b) in enumerate(groups):
        col = pal.get(g, ["#8a5c9f", "#a97ec0"][k % 2])
        svg.rect(X(a), y2, max(1.5, X(b) - X(a) - 0.5), 34, col)
        if X(b) - X(a) > 60:
            shown_g = tr("layer %s") % g.split()[1] if g.startswith("layer ") else tr(g) if g in pal else g
            svg.text((X(a) + X(b)) / 2, y2 + 21, shown_g, size=11, anchor="middle", fill="white", weight="bold")
            svg.text((X(a) + X(b)) / 2, y2 + 50, "{:,} B".format(b - a), size=10, anchor="middle", fill="#555")
    svg.text(X(0), y2 + 66, tr("\u2191 8-byte length + %s-byte JSON header: names, dtypes, shapes, offsets") % "{:,}".format(header),
             size=10, fill="#d9822b")
    svg.text(8, H - 40, tr("the weights are not read at load: the map makes the file's pages the tensors' memory, "
             "read on first touch (chapter 3)"), size=11, fill="#555")
    svg.text(8, H - 24, tr("thread counts and timings are left out: they are the machine's"), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-load.svg"))


# ----------------------------------------------------------------------------- trace_diff

MUTANT = "build/mutants/run-ch10_rope"


def mutant():
    """Chapter 10's interleaved-RoPE mutant, built by the chapter's own command when missing or old."""
    path = os.path.join(ROOT, MUTANT)
    src = os.path.join(ROOT, "kernels.cpp")
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(src) or \
            os.path.getmtime(path) < os.path.getmtime(os.path.join(ROOT, "run")):
        cmd = need(r"^```text output-of: (tools/build_mutant\.sh ch10_rope [^\n]*)$", source("book/10-debugging.md"),
                   "book/10-debugging.md").group(1)
        r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("figures.py trace-diff: `%s` failed:\n%s" % (cmd, r.stdout[-1000:] + r.stderr[-1000:]))
    return MUTANT


def trace_rows(binary):
    cmd = ["/usr/bin/python3", "tools/trace_diff.py", "models/tiny", "--tokens", "1,2,3", "--binary", binary]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode not in (0, 1):      # 1: a tensor differs, which is what the mutant is for
        sys.exit("figures.py trace-diff: `%s` failed:\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    t = r.stdout
    rows = []
    for line in t.split("\n"):
        m = re.match(r"^(\S+)\s+\[\d+, \d+\]\s+\S+\s+\S+\s+(\S+)\s+(ok|DIFFERS)", line)
        if m:
            rows.append((m.group(1), float(m.group(2)), m.group(3) == "ok"))
    tol = float(need(r"\"--tol\", type=float, default=([\d.e-]+)", source("tools/trace_diff.py"), "tools/trace_diff.py").group(1))
    return rows, tol


def fig_trace_diff(out, summary=False):
    good, tol = trace_rows("./run")
    bad, _ = trace_rows(mutant())
    first = next(i for i, r in enumerate(bad) if not r[2])
    if summary:
        print("./run: %d of %d tensors agree, worst error %.1e (tolerance %g)" % (sum(r[2] for r in good), len(good),
                                                                                max(r[1] for r in good), tol))
        print("%s: %d of %d differ; the first is %s (error %.1e)" % (MUTANT, sum(not r[2] for r in bad), len(bad),
                                                                     bad[first][0], bad[first][1]))
        return
    layers = sorted({int(m.group(1)) for n, _, _ in bad for m in [re.match(r"L(\d+)\.", n)] if m})
    per = [n.split(".", 1)[1] for n, _, _ in bad if n.startswith("L0.")]
    cw, rh, x0, y0 = 96, 17, 150, 74
    W = x0 + (len(layers) + 1) * cw + 250
    H = y0 + (len(per) + 3) * rh + 40
    svg = Svg(W, H, tr("trace_diff: the first difference"),
              tr("make figures (tools/figures.py trace-diff: tools/trace_diff.py models/tiny --tokens 1,2,3, ./run and %s)") % MUTANT)
    svg.text(8, 18, tr("tools/trace_diff.py on chapter 10's interleaved-RoPE mutant: every -vv tensor against the reference"),
             size=13, weight="bold")
    svg.text(8, 36, tr("models/tiny, tokens 1,2,3; a cell's number: the error divided by the reference's rms (tolerance %g)") % tol,
             size=11, fill="#555")
    err = {n: (e, ok) for n, e, ok in bad}

    def cell(x, y, name):
        e, ok = err[name]
        k = [n for n, _, _ in bad].index(name)
        fill = "#cfe8c9" if ok else "#f2b8b0" if k > first else "#d9534f"
        svg.rect(x, y, cw - 4, rh - 2, fill)
        svg.text(x + (cw - 4) / 2, y + rh - 5, "%.0e" % e, size=9, anchor="middle", mono=True,
                 fill="white" if k == first else "#222", weight="bold" if k == first else "normal")
        if k == first:
            svg.rect(x - 2, y - 2, cw, rh + 2, "none", stroke="#222", extra=" stroke-width='2'")
    rows = ["embed"] + per + ["final_norm", "logits"]
    for i, r in enumerate(rows):
        y = y0 + i * rh
        svg.text(x0 - 8, y + rh - 5, r, size=10, anchor="end", mono=True)
        if r in ("embed", "final_norm", "logits"):
            if r in err:
                cell(x0, y, r)
            continue
        for j, l in enumerate(layers):
            if "L%d.%s" % (l, r) in err:
                cell(x0 + j * cw, y, "L%d.%s" % (l, r))
    for j, l in enumerate(layers):
        svg.text(x0 + j * cw + (cw - 4) / 2, y0 - 6, tr("layer %d") % l, size=11, anchor="middle", weight="bold")
    xr = x0 + len(layers) * cw + 30
    lines = [tr("the checks go down each column,"), tr("then on to the next layer"), "",
             tr("first difference: %s") % bad[first][0], tr("error %.1e > %g") % (bad[first][1], tol),
             tr("every tensor before it agrees, so the"), tr("bug is in the step that makes it"), "",
             tr("green: within the tolerance"), tr("light red: wrong because an input is"),
             tr("(%d of %d differ)") % (sum(not r[2] for r in bad), len(bad)),
             "", tr("the correct ./run: all %d agree,") % len(good), tr("worst error %.1e") % max(r[1] for r in good)]
    for i, l in enumerate(lines):
        svg.text(xr, y0 + 8 + i * 15, l, size=11, weight="bold" if i in (3, 12) else "normal")
    svg.save(os.path.join(out, "fig-trace-diff.svg"))


# ----------------------------------------------------------------------------- the family table

def arch_rows():
    """The rows of arch.cpp:ARCHS: name, flags, layer tensors, published shapes."""
    t = source("arch.cpp")
    lists = {m.group(1): re.findall(r'\{TensorRole::\w+, "([^"]+)", "([^"]+)"\}', m.group(2))
             for m in re.finditer(r"static const std::vector<ArchTensor> (\w+) = \{(.*?)\n\};", t, re.S)}
    table = need(r"const Arch ARCHS\[\] = \{(.*?)\n\};", t, "arch.cpp:ARCHS").group(1)
    rows = []
    for m in re.finditer(r'\{"(\w+)", "(\w+)", "(\w+)", /\*qkv_bias\*/ (\w+), /\*qk_norm\*/ (\w+), /\*head_dim_stated\*/ (\w+), '
                         r'/\*tied_head\*/ (\w+),\s*ChatStyle::(\w+), (\w+), (\w+),\s*\{(.*?)\}\}', table, re.S):
        shapes = [(s[0], int(s[1]), int(s[2]), int(s[3]), int(s[4]))
                  for s in re.findall(r'\{"([^"]+)", (\d+), (\d+), (\d+), (\d+)', m.group(11))]
        rows.append({"name": m.group(1), "title": m.group(3), "qkv_bias": m.group(4) == "true",
                     "qk_norm": m.group(5) == "true", "head_dim_stated": m.group(6) == "true",
                     "tied": m.group(7) == "true", "chat": m.group(8), "layer": lists.get(m.group(10), []),
                     "shapes": shapes})
    if len(rows) != len(re.findall(r'^    \{"\w+", "\w+",', table, re.M)):
        sys.exit("figures.py families: could not read every row of arch.cpp:ARCHS")
    return rows


def fig_families(out, summary=False):
    rows = arch_rows()
    if summary:
        for r in rows:
            print("%s: %s; %d layer tensors; %s" % (r["name"], ", ".join(k for k in ("qkv_bias", "qk_norm", "head_dim_stated", "tied")
                                                                            if r[k]), len(r["layer"]),
                                                    ", ".join(s[0] for s in r["shapes"])))
        return
    cw, x0 = 300, 20
    n_t = max(len(r["layer"]) for r in rows)
    n_s = max(len(r["shapes"]) for r in rows)
    W = x0 + len(rows) * (cw + 20) + 10
    H = 80 + n_t * 17 + 120 + n_s * 17 + 70
    svg = Svg(W, H, tr("The family table"), tr("make figures (tools/figures.py families: arch.cpp:ARCHS)"))
    svg.text(8, 18, tr("arch.cpp:ARCHS: one row per family, the only place the engine tells them apart"), size=13, weight="bold")
    common = set.intersection(*[set(h for h, g in r["layer"]) for r in rows])
    for k, r in enumerate(rows):
        x = x0 + k * (cw + 20)
        svg.rect(x, 32, cw, H - 80, "#fbfbf8", stroke="#ccc")
        svg.text(x + 10, 52, tr("%s  (model_type \u201c%s\u201d)") % (r["title"], r["name"]), size=13, weight="bold")
        y = 74
        svg.text(x + 10, y, tr("one layer's tensors (Hugging Face name):"), size=11, fill="#555")
        for i, (hf, gg) in enumerate(r["layer"]):
            own = hf not in common
            if own:
                svg.rect(x + 8, y + 5 + i * 17, cw - 16, 16, "#fbe3c8")
            svg.text(x + 12, y + 17 + i * 17, hf, size=10, mono=True, weight="bold" if own else "normal")
        y += 20 + n_t * 17 + 8
        flags = [(tr("q, k, v biases"), r["qkv_bias"]), (tr("q_norm, k_norm per head"), r["qk_norm"]),
                 (tr("head_dim stated (not hidden / heads)"), r["head_dim_stated"]), (tr("tied LM head by default"), r["tied"])]
        for i, (f, on) in enumerate(flags):
            svg.text(x + 12, y + i * 17, ("\u2713 " if on else "\u2013 ") + f, size=11, fill="#222" if on else "#999")
        svg.text(x + 12, y + 4 * 17, tr("chat template: %s") % r["chat"], size=11)
        y += 5 * 17 + 14
        svg.text(x + 10, y, tr("published shapes: hidden, layers, heads / KV heads"), size=11, fill="#555")
        for i, (nm, hid, lay, hh, kv) in enumerate(r["shapes"]):
            yy = y + 8 + i * 17
            svg.text(x + 12, yy + 10, nm, size=10, mono=True)
            svg.rect(x + 112, yy, hid / 4096 * 100, 12, "#3d72b4")
            svg.text(x + 116 + hid / 4096 * 100, yy + 10, "%d, %d, %d/%d" % (hid, lay, hh, kv), size=10, mono=True)
    svg.text(8, H - 24, tr("orange: tensors only that family has; everything else is shared code (net.cpp reads the flags)"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-families.svg"))


# ----------------------------------------------------------------------------- reading paths

READING = [   # (track, chapter numbers in reading order)
    ("the core: one token through the model", ["02", "03", "04", "05", "06", "07", "08"]),
    ("seeing inside", ["09", "10", "11"]),
    ("speed", ["12", "14", "16"]),
    ("serving", ["13"]),
    ("the weights and the family", ["15", "17"]),
    ("in the browser", ["18"]),
]


def fig_reading_path(out, summary=False):
    titles = {}
    book = "book/zh/" if figures_draw.LANG == "zh" else "book/"      # each edition's own titles
    for p in sorted(os.listdir(os.path.join(ROOT, book))):
        m = re.match(r"^(\d\d)-.*\.md$", p)
        if m:
            first = next((l for l in source(book + p).split("\n") if l.startswith("# ")), "# " + p)
            titles[m.group(1)] = re.sub(r"^\d+\s*[\u00b7.\u2014:-]?\s*", "", first[2:]).strip()
    placed = {c for _, cs in READING for c in cs} | {"00", "01"}
    rest = [c for c in sorted(titles) if c not in placed]
    tracks = [(t, [c for c in cs if c in titles]) for t, cs in READING] + ([("more", rest)] if rest else [])
    if summary:
        for t, cs in tracks:
            print("%s: %s" % (t, " -> ".join("%s %s" % (c, titles[c]) for c in cs)))
        return
    start = {"seeing inside": "05", "speed": "05", "serving": "08", "the weights and the family": "03",
             "in the browser": "08"}
    core = tracks[0][1]
    bw, bh, gy, cx, tx, gx = 230, 40, 14, 20, 330, 24
    rows, used = {}, -1
    at = lambda tc: core.index(start[tc[0]]) if start.get(tc[0]) in core else len(core) - 1
    for t_, cs in sorted(tracks[1:], key=at):
        r = at((t_, cs))
        rows[t_] = max(r, used + 1)
        used = rows[t_]
    n_rows = max([len(core) - 1] + list(rows.values())) + 1
    W = tx + max(len(cs) for _, cs in tracks[1:]) * (bw + gx) + 160
    H = 60 + n_rows * (bh + gy) + 40

    def short(s, n=32 if figures_draw.LANG == "en" else 38):   # Noto's Latin letters are narrower than DejaVu's
        if cols(s) <= n:
            return s
        while cols(s) > n - 1:
            s = s[:-1]
        return s.rstrip(" ,:\uff0c\uff1a\u3001") + "\u2026"
    svg = Svg(W, H, tr("Reading paths through the book"), tr("make figures (tools/figures.py reading-path: the chapters' titles)"))
    svg.text(8, 18, tr("Chapter 1 is this map; read the core in order, then any track from the chapter it starts at; "
             "appendix C is the glossary"), size=13, weight="bold")
    svg.text(cx, 40, tr(tracks[0][0]), size=11, weight="bold", fill="#5c7f9f")
    Y = lambda r: 48 + r * (bh + gy)
    for i, c in enumerate(core):
        box(svg, cx, Y(i), bw, bh, ["%d" % int(c), short(titles[c])], mono_from=99)
        if i:
            arrow(svg, cx + bw / 2, Y(i - 1) + bh, cx + bw / 2, Y(i) - 1)
    for t_, cs in tracks[1:]:
        y = Y(rows[t_])
        for i, c in enumerate(cs):
            x = tx + i * (bw + gx)
            box(svg, x, y, bw, bh, ["%d" % int(c), short(titles[c])], fill="#f8f1ea", stroke="#a0641f", mono_from=99)
            if i:
                arrow(svg, x - gx, y + bh / 2, x - 1, y + bh / 2, "#a0641f")
        if start.get(t_) in core:
            sy = Y(core.index(start[t_])) + bh / 2
            arrow(svg, cx + bw, sy, tx - 1, y + bh / 2, "#bbb")
        svg.text(tx + len(cs) * (bw + gx) - gx + 10, y + bh / 2 + 4, tr(t_), size=11, weight="bold", fill="#a0641f")
    svg.text(8, H - 24, tr("grey arrows: the core chapter a track needs first"), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-reading-path.svg"))
