#!/usr/bin/python3
"""The book's figures (book/img/fig-*.svg), drawn from the engine's own numbers where there are any.

    /usr/bin/python3 tools/figures.py [--out DIR] [--lang en,zh] [NAME ...]   (make figures: all of them)
    /usr/bin/python3 tools/figures.py --summary NAME              the numbers behind one figure, as text

Every figure is drawn twice: in English into DIR (book/img/) and in Chinese into DIR/zh
(book/img/zh/, for the Chinese edition). The Chinese labels come from book/terms.tsv where the
label is one of its terms, else from tools/figures_zh.tsv (tools/figures_draw.py:tr); a label
with no Chinese stops the drawing, and so does a row of tools/figures_zh.tsv no figure uses.
report.png, a screenshot of the engine's English page, is drawn in English only.

  attention  causal attention of the default model (trained/kjv) on one verse: every head of
             every layer, and the most "previous token" head large. The weights come from
             tools/qwen2_torch.py, the float64 reference the engine is tested against (the
             engine's own maps are in `./run ... --report`).
  sampling   the sampling chain filtering the real next-token distribution of trained/kjv
             (`./run fwd trained/kjv --tokens ... --dump FILE`): top-k 40, top-p 0.95, temperature
             0.8, the default model's generation_config.json.
  bpe        byte-level BPE merging one word step by step with trained/kjv's merges; the last
             line must equal `./run encode trained/kjv TEXT --pieces` (checked here).
  roofline   the roofline of book/img/data/bench-zen3-2threads.txt (a saved `./run bench`
             output: the machine is named in it): bandwidth and FMA peak, prefill and decode.
  rope       RoPE as rotating pairs: three pairs of a 64-wide head, theta 10^6, positions 0..8.
  gqa        grouped-query attention of Qwen2.5-0.5B: 14 query heads share 2 KV heads.
  kvcache    the KV cache growing over a generation: a 5-token prompt, then 4 decode steps.
  lens       the logit lens of trained/kjv on the first verse at every depth and position, and
             the direct logit attribution of its last prediction (`./run lens --pos all --json`).
  batch      the batch of a serving run, step by step and slot by slot, from a saved
             `./run serve --trace-json` (book/img/data/serve-trace-kjv.json; --trace FILE
             draws another): four overlapping streams, tests/server/batching.py trace.

  In tools/figures_model.py, tools/figures_kernels.py and tools/figures_report.py:
  reading-path  the chapters as a core and tracks, from their titles (chapter 1).
  load          generate.cpp:engine_load's steps with what -v prints, and trained/kjv's file to
                scale from ./run info (chapter 3).
  qkv           q, k and v of layer 0 split into heads and concatenated back, the reference's
                numbers (chapter 5).
  scores        chapter 6's worked example: the causal scores and weights as a heat map.
  rope-pairs    rotate_half against interleaved pairs, and q.k after RoPE depending only on the
                distance (tests/test_book.cpp's vectors; chapter 4).
  trace-diff    tools/trace_diff.py on chapter 10's RoPE mutant (built by the chapter's command).
  families      arch.cpp:ARCHS's rows side by side (chapter 17).
  kvpages       chapter 13's two block tables sharing a prefix, blocks of serve/kv_pages.h.
  quant-blocks  Q8_0, Q4_0 and Q4_K byte by byte, sizes from gguf/quants.cpp (chapter 16).
  q4k-scales    Q4_K's twelve bytes of 6-bit scales, bit by bit, as quants.cpp packs them.
  tile          the register tile of cpu/x86/kernels_avx512.cpp (chapter 12).
  online-softmax  attention over key blocks in one pass, chapter 12's numbers (chapter 6).
  warp-sum      cuda/kernels_cuda.cu:warp_sum's five shuffle steps (chapter 14).
  report        book/img/report.png: a --report page in headless Chromium; the PNG keeps the
                facts it shows, and --check-report PNG tells whether they are still what ./run
                shows (tests/check_figures.sh).

Every SVG figure is deterministic: tests/check_figures.sh redraws them and compares with the
committed files. Each SVG says, in its caption line, the command that made it.
"""
import argparse
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_draw import ROOT, MODEL, LANGS, run, shown, Svg, heat, encode, pieces, set_lang, tr, unused_labels  # noqa: E402

# ----------------------------------------------------------------------------- attention

VERSE = "In the beginning God created the heaven and the earth. And the earth was"


def attention_maps():
    """[layer][head] = T x T weights of the reference model on VERSE, and the tokens."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch
    import qwen2_torch as q
    import torch.nn.functional as Fn
    rec = []

    class Recording:
        def __getattr__(self, name):
            return getattr(Fn, name)

        @staticmethod
        def softmax(x, dim=-1):
            y = Fn.softmax(x, dim=dim)
            rec.append(y[0].detach().double().numpy())
            return y
    q.F = Recording()
    model, _ = q.load_folder(os.path.join(ROOT, MODEL), torch.float64)
    toks = pieces(VERSE)
    ids = torch.tensor([[t[0] for t in toks]])
    with torch.no_grad():
        model(ids)
    return rec, [t[2] for t in toks]


def prev_token_share(m):
    T = len(m)
    return sum(m[t][t - 1] for t in range(1, T)) / (T - 1)


def fig_attention(out, summary=False):
    maps, toks = attention_maps()
    L, H, T = len(maps), len(maps[0]), len(toks)
    shares = [[prev_token_share(maps[l][h]) for h in range(H)] for l in range(L)]
    bl, bh = max(((l, h) for l in range(L) for h in range(H)), key=lambda lh: shares[lh[0]][lh[1]])
    first = [[sum(maps[l][h][t][0] for t in range(1, T)) / (T - 1) for h in range(H)] for l in range(L)]
    if summary:
        print("tokens (%d): %s" % (T, " | ".join(shown(t) for t in toks)))
        print("mean weight on the previous token, per head (rows: layers 0-%d)" % (L - 1))
        for l in range(L):
            print("  L%d  %s" % (l, "  ".join("%.2f" % shares[l][h] for h in range(H))))
        print("mean weight on the first token (positions 1..%d)" % (T - 1))
        for l in range(L):
            print("  L%d  %s" % (l, "  ".join("%.2f" % first[l][h] for h in range(H))))
        return
    cell, lab = 22, 110
    big_w = lab + T * cell
    small = 6
    grid_x = big_w + 50
    sw = T * small
    W = grid_x + H * (sw + 14) + 10
    Hh = max(50 + T * cell + 90, 50 + L * (sw + 26)) + 50
    svg = Svg(W, Hh, tr("Causal attention of the default model"), tr("make figures (tools/figures.py attention)"))
    svg.text(8, 18, tr("layer %d, head %d: %.0f%% of its weight on the previous token")
             % (bl, bh, 100 * shares[bl][bh]), size=13, weight="bold")
    y0 = 34
    m = maps[bl][bh]
    for t in range(T):
        svg.text(lab - 6, y0 + t * cell + cell * 0.68, shown(toks[t]), size=11, anchor="end", mono=True)
        for j in range(T):
            if j > t:
                svg.rect(lab + j * cell, y0 + t * cell, cell - 1, cell - 1, "#eeeeee")
            else:
                svg.rect(lab + j * cell, y0 + t * cell, cell - 1, cell - 1, heat(m[t][j]))
    for j in range(T):
        svg.text(lab + j * cell + cell * 0.65, y0 + T * cell + 6, shown(toks[j]), size=11, anchor="end", mono=True, rotate=-60)
    svg.text(8, Hh - 40, tr("row: the token that looks; column: the token it looks at; grey: the future, masked"),
             size=11, fill="#555")
    svg.text(8, Hh - 25, tr("colour: attention weight, square-root scale (white 0, dark blue 1); every row sums to 1"),
             size=11, fill="#555")
    svg.text(grid_x, 18, tr("%s: all %d layers x %d heads") % (MODEL, L, H), size=13, weight="bold")
    for l in range(L):
        for h in range(H):
            x, y = grid_x + h * (sw + 14), y0 + 14 + l * (sw + 26)
            svg.text(x, y - 3, "L%d h%d" % (l, h), size=10, fill="#444")
            for t in range(T):
                for j in range(t + 1):
                    svg.rect(x + j * small, y + t * small, small, small, heat(maps[l][h][t][j]))
            if (l, h) == (bl, bh):
                svg.rect(x - 1.5, y - 1.5, sw + 3, sw + 3, "none", stroke="#c33", extra=" stroke-width='2'")
    svg.save(os.path.join(out, "fig-attention.svg"))


# ----------------------------------------------------------------------------- sampling

def next_token_logits(text):
    """(id, logit, text) of every vocabulary entry after TEXT, most likely first: all logits from
    `./run fwd --dump` (raw float32), the texts of the first 100 from `--top 100`."""
    import struct
    import tempfile
    ids = ",".join(map(str, encode(text)))
    names = {}
    for line in run(["./run", "fwd", MODEL, "--tokens", ids, "--top", "100"]).split("\n"):
        m = re.match(r'^\s*\d+\. id (\d+)\s+logit\s+(\S+)\s+"(.*)"$', line)
        if m:
            names[int(m.group(1))] = json.loads('"' + m.group(3) + '"')
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        run(["./run", "fwd", MODEL, "--tokens", ids, "--dump", f.name])
        raw = open(f.name, "rb").read()
    with open(os.path.join(ROOT, MODEL, "config.json")) as c:
        vocab = json.load(c)["vocab_size"]
    last = struct.unpack("<%df" % vocab, raw[-4 * vocab:])
    order = sorted(range(vocab), key=lambda i: (-last[i], i))
    return [(i, last[i], names.get(i, "")) for i in order]


def softmax(ls, temp=1.0):
    mx = max(ls)
    e = [math.exp((l - mx) / temp) for l in ls]
    s = sum(e)
    return [x / s for x in e]


SAMPLE_PROMPT = "And Moses said unto the"


def sampling_stages():
    rows = next_token_logits(SAMPLE_PROMPT)
    logits = [r[1] for r in rows]
    k, p, temp = 40, 0.95, 0.8
    full = softmax(logits)
    topk = softmax(logits[:k])
    c, keep = 0.0, k
    for i, q in enumerate(topk):
        c += q
        if c >= p:
            keep = i + 1
            break
    topp = softmax(logits[:keep])
    final = softmax(logits[:keep], temp)
    return rows, [(tr("the model: softmax of all %d logits") % len(rows), full, len(rows)),
                  (tr("top-k 40: the 40 best, renormalized"), topk, k),
                  (tr("top-p 0.95: the fewest of those reaching 0.95 (%d)") % keep, topp, keep),
                  (tr("temperature 0.8: what the draw uses"), final, keep)]


def fig_sampling(out, summary=False):
    rows, stages = sampling_stages()
    if summary:
        print("prompt: %s" % SAMPLE_PROMPT)
        for name, probs, n in stages:
            print("%-52s alive %4d   top: %s" % (name, n, ", ".join("%s %.3f" % (shown(rows[i][2]), probs[i]) for i in range(3))))
        return
    show = 48
    bw, ph, x0 = 11, 90, 60
    W, H = x0 + show * bw + 170, 40 + len(stages) * (ph + 34) + 70
    svg = Svg(W, H, tr("The sampling chain on a real distribution"),
              tr("make figures (tools/figures.py sampling: ./run fwd %s --tokens ... --dump)") % MODEL)
    svg.text(8, 18, tr("Next token after \u201c%s\u201d (%s), the %d most likely tokens") % (SAMPLE_PROMPT, MODEL, show),
             size=13, weight="bold")
    vmax = max(max(pr[:show]) for _, pr, _ in stages)
    for s, (name, probs, n) in enumerate(stages):
        y = 34 + s * (ph + 34)
        svg.text(x0, y + 10, name, size=12, weight="bold")
        base = y + 16 + ph
        svg.line(x0, base, x0 + show * bw, base, "#888")
        for i in range(show):
            alive = i < n
            h = ph * (probs[i] / vmax) if alive else 0
            if alive:
                svg.rect(x0 + i * bw + 1, base - h, bw - 2, h, "#5c7f9f")
            else:
                svg.text(x0 + i * bw + bw / 2, base - 2, "\u00d7", size=9, anchor="middle", fill="#c33")
        mass = sum(probs[:min(n, show)])
        svg.text(x0 + show * bw + 8, base - ph / 2, tr("%d alive") % n, size=11)
        svg.text(x0 + show * bw + 8, base - ph / 2 + 15, tr("top: %.3f") % probs[0], size=11)
        svg.text(x0 + show * bw + 8, base - ph / 2 + 30, tr("%.2f in view") % mass, size=11, fill="#666")
        svg.text(x0 - 6, base - ph + 8, "%.2f" % vmax, size=9, anchor="end", fill="#666")
        svg.text(x0 - 6, base, "0", size=9, anchor="end", fill="#666")
    yb = 34 + len(stages) * (ph + 34)
    for i in range(0, show, 4):
        svg.text(x0 + i * bw + bw / 2, yb - 2, shown(rows[i][2]), size=9, anchor="end", mono=True, rotate=-60)
    svg.save(os.path.join(out, "fig-sampling.svg"))


# ----------------------------------------------------------------------------- bpe

BPE_WORD = " beginning"


def bpe_steps(word):
    with open(os.path.join(ROOT, MODEL, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    merges = tj["model"]["merges"]
    rank = {}
    for i, m in enumerate(merges):
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        rank.setdefault((a, b), i)
    # Byte-level alphabet: the space byte is written as \u0120 ("G with a dot").
    parts = ["\u0120" if ch == " " else ch for ch in word]
    steps = [(list(parts), None)]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = rank.get((parts[i], parts[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        r, i = best
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
        steps.append((list(parts), (r, i)))
    engine = [p[1] for p in pieces(word)]
    if engine != parts:
        sys.exit("figures.py bpe: the merges give %s but ./run encode --pieces gives %s" % (parts, engine))
    return steps


def fig_bpe(out, summary=False):
    steps = bpe_steps(BPE_WORD)
    if summary:
        for parts, m in steps:
            print("%-40s %s" % (" ".join(parts), "" if m is None else "merge rank %d" % m[0]))
        return
    ch, rh, x0 = 17, 30, 40
    n = len(steps[0][0])
    W, H = max(720, x0 + n * ch * 2 + 260), 50 + len(steps) * rh + 40
    svg = Svg(W, H, tr("BPE merging one word"), tr("make figures (tools/figures.py bpe; checked against ./run encode %s --pieces)") % MODEL)
    svg.text(8, 18, tr("\u201c%s\u201d with the merges of %s: the lowest-ranked adjacent pair merges first")
             % (BPE_WORD, MODEL), size=13, weight="bold")
    for s, (parts, m) in enumerate(steps):
        y = 34 + s * rh
        x = x0
        for k, p in enumerate(parts):
            w = len(p) * ch * 1.1 + 10
            new = m is not None and k == m[1]
            svg.rect(x, y, w, rh - 8, "#f3e3b0" if new else "#f6f6f2", stroke="#b9a96a" if new else "#ccc")
            svg.text(x + w / 2, y + rh - 14, p, size=13, anchor="middle", mono=True)
            x += w + 4
        svg.text(x + 12, y + rh - 14, tr("start: one piece per byte") if m is None else tr("merge #%d") % m[0], size=11, fill="#555")
    svg.text(x0, H - 26, tr("\u0120 is the byte of the space (byte-level BPE); highlighted: the piece the merge just made"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-bpe.svg"))


# ----------------------------------------------------------------------------- roofline

BENCH = "book/img/data/bench-zen3-2threads.txt"


def bench_numbers():
    with open(os.path.join(ROOT, BENCH), encoding="utf-8") as f:
        t = f.read()
    bw = float(re.search(r"read bandwidth ([\d.]+) GB/s", t).group(1))
    peak = float(re.search(r"FMA peak ([\d.]+) GFLOP/s", t).group(1))
    gflop = float(re.search(r"prefill ([\d.]+) GFLOP/token", t).group(1))
    machine = re.search(r"^# machine: (.*)$", t, re.M).group(1).strip()
    rows = []
    for line in t.split("\n"):
        m = re.match(r"^(BF16|Q8_0|F16|F32)\s+fast\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows.append((m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(5))))
    return machine, bw, peak, gflop, rows


def fig_roofline(out, summary=False):
    machine, bw, peak, gflop, rows = bench_numbers()
    pts = []
    for typ, pp16, pp128, dec, gbtok in rows:
        pts.append(("%s decode" % typ, gflop / gbtok, dec * gflop))
        pts.append(("%s prefill 128" % typ, 128 * gflop / gbtok, pp128 * gflop))
    if summary:
        print("machine: %s" % machine)
        print("bandwidth %.1f GB/s, FMA peak %.0f GFLOP/s, ridge %.1f FLOP/byte" % (bw, peak, peak / bw))
        for name, ai, perf in pts:
            print("%-18s %7.2f FLOP/byte  %7.1f GFLOP/s  (roof %.1f)" % (name, ai, perf, min(peak, bw * ai)))
        return
    W, H, x0, y0, pw, ph = 800, 470, 80, 40, 560, 340
    lx0, lx1, ly0, ly1 = -1.0, 3.0, 0.0, 3.0   # log10 ranges: 0.1..1000 FLOP/byte, 1..1000 GFLOP/s
    X = lambda ai: x0 + (math.log10(ai) - lx0) / (lx1 - lx0) * pw
    Y = lambda g: y0 + ph - (math.log10(g) - ly0) / (ly1 - ly0) * ph
    svg = Svg(W, H, tr("Roofline"), tr("make figures (tools/figures.py roofline, from %s)") % BENCH)
    svg.text(8, 18, tr("Roofline: %s") % machine, size=13, weight="bold")
    for e in range(int(lx0), int(lx1) + 1):
        svg.line(X(10 ** e), y0, X(10 ** e), y0 + ph, "#e4e4e4")
        svg.text(X(10 ** e), y0 + ph + 16, "%g" % 10 ** e, size=11, anchor="middle")
    for e in range(int(ly0), int(ly1) + 1):
        svg.line(x0, Y(10 ** e), x0 + pw, Y(10 ** e), "#e4e4e4")
        svg.text(x0 - 6, Y(10 ** e) + 4, "%g" % 10 ** e, size=11, anchor="end")
    svg.text(x0 + pw / 2, y0 + ph + 36, tr("arithmetic intensity (FLOP per byte of weights read)"), size=12, anchor="middle")
    svg.text(22, y0 + ph / 2, "GFLOP/s", size=12, anchor="middle", rotate=-90)
    ridge = peak / bw
    a0 = 10 ** lx0
    svg.line(X(a0), Y(bw * a0), X(ridge), Y(peak), "#c33", 2)
    svg.line(X(ridge), Y(peak), X(10 ** lx1), Y(peak), "#c33", 2)
    svg.text(X(0.3), Y(bw * 0.3) - 10, tr("memory: %.1f GB/s") % bw, size=11, fill="#c33", rotate=-31)
    svg.text(X(10 ** lx1) - 4, Y(peak) - 6, tr("FMA peak %.0f GFLOP/s") % peak, size=11, anchor="end", fill="#c33")
    svg.line(X(ridge), Y(peak), X(ridge), y0 + ph, "#c33", 1, " stroke-dasharray='3,3'")
    svg.text(X(ridge) + 4, y0 + ph - 6, tr("ridge %.1f") % ridge, size=10, fill="#c33")
    colours = {"BF16": "#1f5fa0", "Q8_0": "#2f8a3a", "F16": "#a0641f", "F32": "#7a3fa0"}
    for name, ai, perf in pts:
        typ = name.split()[0]
        cx, cy = X(ai), Y(perf)
        if "decode" in name:
            svg.add("<circle cx='%.1f' cy='%.1f' r='5' fill='%s'/>" % (cx, cy, colours[typ]))
        else:
            svg.rect(cx - 5, cy - 5, 10, 10, colours[typ])
    ly = y0 + 8
    for typ, col in colours.items():
        svg.rect(x0 + pw + 16, ly, 10, 10, col)
        svg.text(x0 + pw + 32, ly + 9, typ, size=11)
        ly += 18
    svg.add("<circle cx='%.1f' cy='%.1f' r='5' fill='#555'/>" % (x0 + pw + 21, ly + 12))
    svg.text(x0 + pw + 32, ly + 16, tr("decode"), size=11)
    svg.rect(x0 + pw + 16, ly + 26, 10, 10, "#555")
    svg.text(x0 + pw + 32, ly + 35, tr("prefill, 128 tokens"), size=11)
    svg.save(os.path.join(out, "fig-roofline.svg"))


# ----------------------------------------------------------------------------- rope

def fig_rope(out, summary=False):
    d, theta = 64, 1e6
    pairs = [0, 4, 8]
    freqs = [theta ** (-2.0 * i / d) for i in pairs]
    if summary:
        for i, f in zip(pairs, freqs):
            print("pair %2d (numbers %d and %d): %.4f rad per position" % (i, i, i + d // 2, f))
        return
    r, gap = 80, 60
    W, H = len(pairs) * (2 * r + gap) + 40, 2 * r + 120
    svg = Svg(W, H, tr("RoPE rotates pairs"), tr("make figures (tools/figures.py rope)"))
    svg.text(8, 18, tr("RoPE: pair i of a 64-wide head turns by pos \u00b7 \u03b8^(\u22122i/64), \u03b8 = 10\u2076; positions 0 to 8"),
             size=13, weight="bold")
    for k, (i, f) in enumerate(zip(pairs, freqs)):
        cx, cy = 30 + r + k * (2 * r + gap), 40 + r + 10
        svg.add("<circle cx='%.1f' cy='%.1f' r='%d' fill='none' stroke='#ccc'/>" % (cx, cy, r))
        labels = []   # positions labelled: only where a label fits (0.16 rad apart), always 0 and 8
        for pos in range(9):
            a = pos * f
            x, y = cx + r * math.cos(a), cy - r * math.sin(a)
            shade = int(200 - 20 * pos)
            col = "#%02x%02x%02x" % (shade // 3, shade // 2, min(255, shade + 40))
            svg.line(cx, cy, x, y, col, 1.6)
            if not labels or a - labels[-1] * f >= 0.16:
                labels.append(pos)
            elif pos == 8 and labels[-1] != 0:
                labels[-1] = pos
            elif pos == 8:
                labels.append(pos)
        for pos in labels:
            a = pos * f
            svg.text(cx + (r + 10) * math.cos(a), cy - (r + 10) * math.sin(a) + 4, str(pos), size=10, anchor="middle")
        hidden = [p for p in range(9) if p not in labels]
        if hidden:
            svg.text(cx + r + 14, cy + 16, tr("(%d to %d between)") % (hidden[0], hidden[-1]) if len(hidden) > 2 else
                     tr("(%s between)") % tr(" and ").join(map(str, hidden)), size=9, anchor="middle", fill="#777")
        svg.text(cx, cy + r + 28, tr("pair %d: numbers %d and %d") % (i, i, i + d // 2), size=12, anchor="middle")
        svg.text(cx, cy + r + 44, tr("%.3f rad per position") % f, size=11, anchor="middle", fill="#555")
    svg.save(os.path.join(out, "fig-rope.svg"))


# ----------------------------------------------------------------------------- gqa

def qwen_shape():
    """Heads of Qwen2.5-0.5B, from the generated model's config.json when it is there."""
    cfg = {"num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896, "num_hidden_layers": 24}
    p = os.path.join(ROOT, "models/qwen2.5-0.5b/config.json")
    if os.path.exists(p):
        with open(p) as f:
            c = json.load(f)
        cfg = {k: c[k] for k in cfg}
    return cfg


def fig_gqa(out, summary=False):
    c = qwen_shape()
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c["hidden_size"] // H
    group = H // KV
    if summary:
        print("%d query heads, %d KV heads of width %d: KV head h / %d serves query head h" % (H, KV, hd, group))
        return
    bw, x0 = 44, 40
    W, H_ = x0 + H * (bw + 6) + 40, 230
    svg = Svg(W, H_, tr("Grouped-query attention"), tr("make figures (tools/figures.py gqa)"))
    svg.text(8, 18, tr("Grouped-query attention in Qwen2.5-0.5B: %d query heads share %d key/value heads (kvh = h / %d)")
             % (H, KV, group), size=13, weight="bold")
    cols = ["#5c7f9f", "#9f7a5c", "#5c9f6a", "#8a5c9f"]
    for h in range(H):
        x = x0 + h * (bw + 6)
        svg.rect(x, 40, bw, 40, "#eef3f8", stroke=cols[(h // group) % 4])
        svg.text(x + bw / 2, 65, "q%d" % h, size=12, anchor="middle", mono=True)
        kx = x0 + (h // group) * group * (bw + 6) + (group * (bw + 6) - 6) / 2
        svg.line(x + bw / 2, 80, kx, 140, cols[(h // group) % 4], 1.2)
    for k in range(KV):
        x = x0 + k * group * (bw + 6)
        w = group * (bw + 6) - 6
        svg.rect(x, 140, w, 40, "#f8f1ea", stroke=cols[k % 4])
        svg.text(x + w / 2, 165, tr("K, V head %d (%d numbers each)") % (k, hd), size=12, anchor="middle")
    svg.text(x0, 205, tr("the KV cache stores %d heads instead of %d: %dx less memory per token") % (KV, H, H // KV),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-gqa.svg"))


# ----------------------------------------------------------------------------- kv cache

def fig_kvcache(out, summary=False):
    c = qwen_shape()
    L, KV, hd = c["num_hidden_layers"], c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"]
    per_tok = L * 2 * KV * hd * 4
    prompt, steps = 5, 4
    if summary:
        print("per token: %d layers x 2 (K, V) x %d heads x %d x 4 bytes = %d bytes" % (L, KV, hd, per_tok))
        return
    cw, rh, x0 = 26, 22, 150
    W = max(800, x0 + (prompt + steps) * cw + 160)
    H = 40 + (steps + 1) * (rh + 18) + 50
    svg = Svg(W, H, tr("The KV cache growing"), tr("make figures (tools/figures.py kvcache)"))
    svg.text(8, 18, tr("The KV cache over a generation (Qwen2.5-0.5B, f32): one column per position, %s KiB each")
             % ("%g" % (per_tok / 1024)), size=13, weight="bold")
    for s in range(steps + 1):
        y = 36 + s * (rh + 18)
        n = prompt + s
        svg.text(x0 - 8, y + rh - 6, tr("prefill (5 tokens)") if s == 0 else tr("decode step %d") % s, size=12, anchor="end")
        for p in range(prompt + steps):
            if p < n:
                fill = "#5c7f9f" if p < prompt else "#9fbfdf"
                if s > 0 and p == n - 1:
                    fill = "#e0a040"
                svg.rect(x0 + p * cw, y, cw - 3, rh, fill)
            else:
                svg.rect(x0 + p * cw, y, cw - 3, rh, "none", stroke="#ddd")
        svg.text(x0 + (prompt + steps) * cw + 10, y + rh - 6, tr("%d positions, %g KiB") % (n, n * per_tok / 1024), size=11)
    svg.text(x0, H - 26, tr("dark: the prompt, written at once; orange: the one row each decode step appends and reads back with the rest"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-kvcache.svg"))


# ----------------------------------------------------------------------------- decode at depth

DEPTH_RECORDS = "book/records/bench.jsonl"


def depth_series():
    """{(engine, kv): {depth: median tok/s}} of the decode rows after a context (tgN@dD, and tgN of the
    same runs at depth 0) in the records ./run bench --depth --save wrote; and the machines they ran on.
    Runs of code since outrun (a variant in book/records/variants.tsv: tools/records.py) are left out."""
    import records
    runs, machines = {}, set()
    for r in records.read_records(ROOT)[0]:
        if not r["_where"].startswith(DEPTH_RECORDS + ":"):
            continue
        rows = [x for x in r["rows"] if x["test"].startswith("tg") and x.get("tok_s") and not x.get("variant")]
        if not any("@d" in x["test"] for x in rows):
            continue  # not a --depth run, or one of outrun code
        machines.add(r["machine"])
        for x in rows:
            runs.setdefault((x["engine"], x.get("kv") or "f32"), {}).setdefault(x["depth"], []).append(x["tok_s"])
    med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2
    return {k: {d: med(v) for d, v in by.items()} for k, by in runs.items()}, machines


def fig_depth(out, summary=False):
    series, machines = depth_series()
    if summary:
        for (engine, kv), by in sorted(series.items()):
            print("%-10s KV %-5s %s" % (engine, kv, "  ".join("d%d %.1f" % (d, v) for d, v in sorted(by.items()))))
        return
    depths = sorted({d for by in series.values() for d in by})
    top = max([v for by in series.values() for v in by.values()] + [1])
    W, H, x0, y0, pw, ph = 800, 420, 80, 50, 520, 290
    X = lambda i: x0 + (i + 0.5) * pw / max(1, len(depths))
    Y = lambda v: y0 + ph - v / (top * 1.1) * ph
    svg = Svg(W, H, tr("Decode speed after a context"), tr("make figures (tools/figures.py depth, from %s)") % DEPTH_RECORDS)
    svg.text(8, 18, tr("Decode after a context of each length: %s, 2 threads, bf16 weights") % ", ".join(sorted(machines)),
             size=13, weight="bold")
    for k in range(0, int(top * 1.1) + 1, 5):
        svg.line(x0, Y(k), x0 + pw, Y(k), "#e4e4e4")
        svg.text(x0 - 6, Y(k) + 4, "%d" % k, size=11, anchor="end")
    for i, d in enumerate(depths):
        svg.text(X(i), y0 + ph + 16, "{:,}".format(d), size=11, anchor="middle")
    svg.text(x0 + pw / 2, y0 + ph + 36, tr("tokens already in the KV cache (depth)"), size=12, anchor="middle")
    svg.text(22, y0 + ph / 2, tr("decode tok/s"), size=12, anchor="middle", rotate=-90)
    colours = {"lantern": "#1f5fa0", "llama.cpp": "#c0504d"}
    dash = {"f16": "", "q8_0": " stroke-dasharray='6,4'"}
    ly = y0
    for (engine, kv), by in sorted(series.items()):
        pts = [(X(depths.index(d)), Y(v)) for d, v in sorted(by.items())]
        for (ax, ay), (bx, by_) in zip(pts, pts[1:]):
            svg.line(ax, ay, bx, by_, colours.get(engine, "#555"), 2, dash.get(kv, ""))
        for px, py in pts:
            svg.add("<circle cx='%.1f' cy='%.1f' r='4' fill='%s'/>" % (px, py, colours.get(engine, "#555")))
        svg.line(x0 + pw + 16, ly + 6, x0 + pw + 46, ly + 6, colours.get(engine, "#555"), 2, dash.get(kv, ""))
        svg.text(x0 + pw + 52, ly + 10, tr("%s, KV cache %s") % ("Lantern" if engine == "lantern" else engine, kv), size=11)
        ly += 20
    svg.text(x0, H - 26, tr("medians of the records; each point: the same weights, threads and cache type for both engines"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-depth.svg"))


# ----------------------------------------------------------------------------- the batch

BATCH_TRACE = os.path.join(ROOT, "book", "img", "data", "serve-trace-kjv.json")
PHASE = {"prefill": "#d9822b", "decode": "#3d72b4"}


def fig_batch(out, summary=False):
    """The batch of a serving run, drawn from its --trace-json: as the report's batch view."""
    ev = json.load(open(BATCH_TRACE, encoding="utf-8"))["traceEvents"]
    cells = [e["args"] for e in ev if e.get("ph") == "X" and e.get("cat") in PHASE]
    if not cells:
        sys.exit("figures.py batch: %s has no per-slot slices (is it a ./run serve trace?)" % BATCH_TRACE)
    n = max(c["step"] for c in cells)
    slots = max(c["slot"] for c in cells) + 1
    per_step = [0] * (n + 1)
    for c in cells:
        per_step[c["step"]] += 1
    if summary:
        reqs = sorted({c["request"] for c in cells})
        print("%d steps, %d slots, %d requests; sequences per step: at most %d, %.2f on average"
              % (n, slots, len(reqs), max(per_step), sum(per_step) / n))
        for r in reqs:
            mine = [c for c in cells if c["request"] == r]
            read = sum(c["tokens"] for c in mine if c["phase"] == "prefill")
            print("  request %d: slot %d, steps %d-%d, prompt %d tokens (%d shared from the cache, %d read), %d tokens sampled"
                  % (r, mine[0]["slot"], mine[0]["step"], mine[-1]["step"], mine[0]["pos"] + read, mine[0]["pos"], read,
                     sum("token" in c for c in mine)))
        steps = [e["args"] | {"dur": e["dur"]} for e in ev if e.get("ph") == "X" and e.get("cat") == "step"]
        for k in range(1, slots + 1):
            d = sorted(s["dur"] for s in steps if s["sequences"] == k and s["prefill_rows"] == 0)
            if d:
                print("  decode-only steps of %d sequence%s: %d, median %.2f ms" % (k, "" if k == 1 else "s", len(d), d[len(d) // 2] / 1000))
        return
    cw = max(3, min(24, 900 // n))
    L, top, lane = 70, 46, 24
    W = L + n * cw + 30
    H = top + slots * lane + 62
    svg = Svg(W, H, tr("The batch, step by step"), tr("make figures (tools/figures.py batch, from %s)") % os.path.relpath(BATCH_TRACE, ROOT))
    svg.text(8, 18, tr("One column per scheduler step, one row per slot: %d requests in %d steps") % (
        len({c["request"] for c in cells}), n), size=13, weight="bold")
    x = L
    for name, col in PHASE.items():
        svg.rect(x, 27, 12, 10, col)
        svg.text(x + 16, 36, tr("prefill (a prompt chunk)") if name == "prefill" else tr("decode (one token)"), size=11)
        x += 190
    svg.rect(x, 27, 12, 10, "#f3f1ec")
    svg.text(x + 16, 36, tr("free slot"), size=11)
    for i in range(slots):
        y = top + i * lane
        svg.text(L - 8, y + lane / 2 + 4, tr("slot %d") % i, size=11, anchor="end")
        svg.rect(L, y + 1, n * cw, lane - 4, "#f3f1ec")
    run = {}  # slot -> (request, first step) of the run of cells being drawn
    def label(slot, end):
        if slot in run and (end - run[slot][1]) * cw >= 22:
            svg.text(L + (run[slot][1] - 1) * cw + 3, top + slot * lane + lane / 2 + 3, "#%d" % run[slot][0], size=10, fill="white")
    by_step = {}
    for c in cells:
        by_step.setdefault(c["step"], {})[c["slot"]] = c
    for k in range(1, n + 1):
        here = by_step.get(k, {})
        for slot, c in sorted(here.items()):
            svg.rect(L + (k - 1) * cw, top + slot * lane + 1, cw - (1 if cw >= 6 else 0), lane - 4, PHASE[c["phase"]],
                     extra=" data-request='%d' data-step='%d'" % (c["request"], k))
        for slot in range(slots):
            now = here[slot]["request"] if slot in here else None
            if (run.get(slot) or (None,))[0] != now:
                label(slot, k)
                if now is None:
                    run.pop(slot, None)
                else:
                    run[slot] = (now, k)
    for slot in range(slots):
        label(slot, n + 1)
    ya = top + slots * lane + 14
    step = 10 if n <= 150 else 20 if n <= 300 else 50
    for k in range(step, n + 1, step):
        svg.text(L + (k - 0.5) * cw, ya, str(k), size=10, anchor="middle", fill="#555")
    svg.text(L - 8, ya, tr("step"), size=10, anchor="end", fill="#555")
    svg.text(L, ya + 20, tr("sequences per step: at most %d, %.2f on average; #N is the request (its answer's id is chatcmpl-N)")
             % (max(per_step), sum(per_step) / n), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-batch.svg"))


# name -> function; each draws fig-NAME.svg (report: report.png). One entry per line.
import figures_kernels as fk  # noqa: E402
import figures_model as fm  # noqa: E402
import figures_report as fr  # noqa: E402
FIGURES = {
    "attention": fig_attention,
    "sampling": fig_sampling,
    "bpe": fig_bpe,
    "roofline": fig_roofline,
    "rope": fig_rope,
    "gqa": fig_gqa,
    "kvcache": fig_kvcache,
    "depth": fig_depth,
    "batch": fig_batch,
    "reading-path": fm.fig_reading_path,
    "load": fm.fig_load,
    "qkv": fm.fig_qkv,
    "scores": fm.fig_scores,
    "rope-pairs": fm.fig_rope_pairs,
    "trace-diff": fm.fig_trace_diff,
    "families": fm.fig_families,
    "kvpages": fk.fig_kvpages,
    "quant-blocks": fk.fig_quant_blocks,
    "q4k-scales": fk.fig_q4k_scales,
    "tile": fk.fig_tile,
    "online-softmax": fk.fig_online_softmax,
    "warp-sum": fk.fig_warp_sum,
    "report": fr.fig_report,
}


def file_of(name):
    return "report.png" if name == "report" else "fig-%s.svg" % name


# ----------------------------------------------------------------------------- lens

LENS_PROMPT = "In the beginning God created the heaven and the"


def y0_bars(D, ch):
    """Where the lens figure's legend ends: below the D rows of cells."""
    return 40 + 16 + D * ch + 33


def fig_lens(out, summary=False):
    """The logit lens of trained/kjv on LENS_PROMPT at every depth and position (./run lens --pos all),
    and the direct logit attribution of the last position's prediction."""
    j = json.loads(run(["./run", "lens", MODEL, LENS_PROMPT, "--raw", "--pos", "all", "--top", "1", "--json", "-q"]))
    cols = j["positions"]
    D, T = len(cols[0]["lens"]), len(cols)
    toks = [c["text"] for c in cols]
    last = cols[-1]
    a = last["attribution"]
    terms = [(tr("embedding"), a["embed"])]
    for l, lay in enumerate(a["layers"]):
        terms += [(tr("layer %d attention") % l, lay["attn"]), (tr("layer %d MLP") % l, lay["mlp"])]
    if summary:
        print("prompt: %s (%s, --raw)" % (LENS_PROMPT, MODEL))
        for d in range(D):
            print("  %-8s %s" % (cols[0]["lens"][d]["name"], "  ".join("%s %.2f" % (shown(c["lens"][d]["top"][0]["text"]), c["lens"][d]["top"][0]["prob"]) for c in cols)))
        print("attribution of %s: %s = %.4f" % (shown(last["target"]["text"]), ", ".join("%s %+.3f" % t for t in terms), a["total"]))
        return
    cw, ch, lab = 74, 26, 70
    bar_x, bar_w = lab + T * cw + 170, 160
    W = bar_x + 2 * bar_w + 70
    Hh = max(y0_bars(D, ch) + 70, 66 + len(terms) * 20 + 40)
    svg = Svg(W, Hh, tr("The logit lens and direct logit attribution of the default model"),
              tr("make figures (tools/figures.py lens: ./run lens %s ... --pos all --json)") % MODEL)
    svg.text(8, 18, tr("What each depth would predict after \u201c%s\u201d (%s)") % (LENS_PROMPT, MODEL), size=13, weight="bold")
    y0 = 40
    for t in range(T):
        svg.text(lab + t * cw + cw / 2, y0 + 8, shown(toks[t]), size=11, anchor="middle", mono=True, fill="#555")
    for d in range(D):
        y = y0 + 16 + d * ch
        depth = cols[0]["lens"][d]["name"]          # "embed" or "layer N"
        m = re.match(r"^layer (\d+)$", depth)
        svg.text(lab - 6, y + ch * 0.65, tr("layer %d") % int(m.group(1)) if m else tr(depth), size=11, anchor="end")
        for t, c in enumerate(cols):
            top = c["lens"][d]["top"][0]
            hit = t + 1 < T and top["id"] == j["prompt_ids"][t + 1] or t + 1 == T and top["id"] == c["target"]["id"]
            svg.rect(lab + t * cw, y, cw - 2, ch - 2, heat(top["prob"]), stroke="#c33" if hit else "none",
                     extra=" stroke-width='2'" if hit else "")
            svg.text(lab + t * cw + cw / 2, y + ch * 0.65, shown(top["text"])[:9], size=10, anchor="middle", mono=True,
                     fill="#fff" if top["prob"] > 0.45 else "#222")
    yb = y0 + 16 + D * ch + 18
    svg.text(8, yb, tr("cell: the top token of the residual stream read through the final norm and the LM head; colour: its "
             "probability (square-root scale)"), size=11, fill="#555")
    svg.text(8, yb + 15, tr("red frame: the token that comes next in the verse (the last column: the model's own top, %s)")
             % shown(last["target"]["text"]), size=11, fill="#555")
    svg.text(bar_x - 150, 40, tr("the logit of %s, %.3f, term by term") % (shown(last["target"]["text"]), last["target"]["logit"]),
             size=12, weight="bold")
    scale = max(abs(v) for _, v in terms) or 1
    for i, (name, v) in enumerate(terms):
        y = y0 + 14 + i * 20
        svg.text(bar_x - 8, y + 12, name, size=11, anchor="end")
        w = bar_w * abs(v) / scale
        svg.rect(bar_x + bar_w - (w if v < 0 else 0), y + 2, w, 13, "#3d72b4" if v < 0 else "#d9822b")
        svg.text(bar_x + 2 * bar_w + 6, y + 12, "%+.3f" % v, size=11, mono=True)
    svg.line(bar_x + bar_w, y0 + 10, bar_x + bar_w, y0 + 18 + len(terms) * 20, "#888")
    svg.save(os.path.join(out, "fig-lens.svg"))


FIGURES["lens"] = fig_lens


def main():
    global BATCH_TRACE
    ap = argparse.ArgumentParser(description="Draw the book's figures (book/img/fig-*.svg).")
    ap.add_argument("names", nargs="*", help="figures to draw (default: all): " + ", ".join(FIGURES))
    ap.add_argument("--out", default=os.path.join(ROOT, "book", "img"), help="folder for the SVG files")
    ap.add_argument("--lang", default=",".join(LANGS), help="the languages to draw, comma-separated (default: "
                    "%s): en into --out, the others into a folder of their name in it" % ",".join(LANGS))
    ap.add_argument("--summary", action="store_true", help="print the numbers behind the figures instead")
    ap.add_argument("--check-report", metavar="PNG", help="exit 1 when PNG (book/img/report.png) no longer shows what "
                    "the report shows now: its command, model, shape, sampler, prompt and output")
    ap.add_argument("--trace", help="batch: the ./run serve --trace-json to draw (default: %s)" % os.path.relpath(BATCH_TRACE, ROOT))
    args = ap.parse_args()
    if args.trace:
        BATCH_TRACE = os.path.abspath(args.trace)
    for n in args.names:
        if n not in FIGURES:
            sys.exit("figures.py: no figure named %r (there are: %s)" % (n, ", ".join(FIGURES)))
    if not os.path.exists(os.path.join(ROOT, "run")):
        sys.exit("figures.py: ./run is not built (make)")
    if args.check_report:
        return fr.check_report(args.check_report)
    langs = ["en"] if args.summary else args.lang.split(",")
    for lang in langs:
        set_lang(lang)
        out = args.out if lang == "en" else os.path.join(args.out, lang)
        os.makedirs(out, exist_ok=True)
        for n in args.names or list(FIGURES):
            if lang != "en" and n == "report":
                continue
            done = FIGURES[n](out, summary=args.summary)
            if not args.summary:
                print("%s %s" % ("kept (current)" if done == "kept" else "drew", os.path.relpath(os.path.join(out, file_of(n)), ROOT)))
    set_lang("en")
    if "zh" in langs and not args.names and unused_labels():
        sys.exit("figures.py: tools/figures_zh.tsv has rows no figure draws (remove them): %s"
                 % "; ".join(repr(s) for s in unused_labels()))
    return 0



# ============================================================================= the transformer in brief
#
# Chapter 2 opens with "The transformer in brief": five ideas, one picture each, all drawn from
# the default model (trained/kjv) on one verse.
#
#   brief-tokens     the verse cut into tokens, with the ids `./run encode --pieces` gives
#   brief-embedding  rows of the embedding table (model.safetensors) and how alike they point
#   brief-loss       the loss: -ln p of each real next token, from `./run fwd --dump`, and the
#                    training log that lowered it (trained/kjv/train_log.csv)
#   brief-heads      the four heads of the last layer, looking from the same token at different
#                    ones (the float64 reference, as for the attention figure)
#   brief-residual   one token's residual stream: what each block adds, and what the stream would
#                    predict if read out early; the last row must equal the engine's probability
#
# The names start with brief- so that these five stay together, apart from the chapters' figures.

BRIEF_VERSE = "In the beginning God created the heaven and the earth."
BRIEF_WORDS = [" gold", " silver", " seven", " six", " father", " brother", " day", " night"]


def brief_diverging(v, vmax):
    """A number -> colour: blue below zero, white at zero, red above (linear up to vmax)."""
    t = max(-1.0, min(1.0, v / vmax))
    c1 = (178, 34, 34) if t > 0 else (31, 95, 160)
    t = abs(t)
    return "#%02x%02x%02x" % tuple(int(round(255 + (b - 255) * t)) for b in c1)


def brief_logprobs(ids):
    """-ln p of each next token of IDS under the engine (`./run fwd --tokens ... --dump`)."""
    import struct
    import tempfile
    with open(os.path.join(ROOT, MODEL, "config.json")) as c:
        vocab = json.load(c)["vocab_size"]
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        run(["./run", "fwd", MODEL, "--tokens", ",".join(map(str, ids)), "--dump", f.name])
        raw = open(f.name, "rb").read()
    out = []
    for t in range(len(ids) - 1):
        row = struct.unpack_from("<%df" % vocab, raw, 4 * vocab * t)
        mx = max(row)
        lse = mx + math.log(sum(math.exp(x - mx) for x in row))
        out.append(lse - row[ids[t + 1]])
    return out


def fig_brief_tokens(out, summary=False):
    toks = pieces(BRIEF_VERSE)
    with open(os.path.join(ROOT, MODEL, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    n_merges, n_special = len(tj["model"]["merges"]), len(tj.get("added_tokens", []))
    known, unknown = pieces(" Nebuchadnezzar"), pieces(" photosynthesis")
    if summary:
        print("%s -> %s" % (BRIEF_VERSE, " ".join(str(t[0]) for t in toks)))
        print("vocabulary: 256 bytes + %d merges + %d special = %d ids" % (n_merges, n_special, 256 + n_merges + n_special))
        print("Nebuchadnezzar: %d token(s); photosynthesis: %d" % (len(known), len(unknown)))
        return
    cw = 8.4
    W, H = 800, 316
    svg = Svg(W, H, tr("Text becomes token ids"), tr("make figures (tools/figures.py brief-tokens: ./run encode %s --pieces)") % MODEL)
    svg.text(8, 18, tr("The tokenizer of %s cuts text into pieces and gives each piece its id") % MODEL, size=13, weight="bold")
    svg.text(20, 48, "\u201c%s\u201d" % BRIEF_VERSE, size=14, mono=True)

    def row(y, ts):
        x = 20
        for tid, _, txt in ts:
            w = max(len(shown(txt)), len(str(tid))) * cw + 10
            svg.rect(x, y, w, 26, "#eef3f8", stroke="#5c7f9f")
            svg.text(x + w / 2, y + 17, shown(txt), size=13, anchor="middle", mono=True)
            svg.text(x + w / 2, y + 44, str(tid), size=12, anchor="middle", mono=True, fill="#a0641f", weight="bold")
            x += w + 5
        return x
    row(64, toks)
    svg.text(20, 134, tr("pieces (\u00b7 is the space, which belongs to the word after it)"), size=11, fill="#555")
    svg.text(470, 134, tr("ids: what the network receives"), size=11, fill="#a0641f")
    x = row(156, known)
    svg.text(x + 8, 173, tr("a name the Bible uses often: one token"), size=11, fill="#555")
    x = row(218, unknown)
    svg.text(x + 8, 235, tr("a word it never uses: %d small pieces") % len(unknown), size=11, fill="#555")
    svg.text(8, H - 24, tr("%d ids in all: 256 single bytes, %d merged pieces, %d special tokens; any text can be written with them")
             % (256 + n_merges + n_special, n_merges, n_special), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-brief-tokens.svg"))


def fig_brief_embedding(out, summary=False):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import qwen2_torch as q
    emb = q.read_safetensors(os.path.join(ROOT, MODEL, "model.safetensors"))["model.embed_tokens.weight"].float()
    ids = [pieces(w) for w in BRIEF_WORDS]
    if any(len(p) != 1 for p in ids):
        sys.exit("figures.py brief-embedding: every word must be one token: %s" % ids)
    ids = [p[0][0] for p in ids]
    rows = [emb[i].tolist() for i in ids]
    norm = [math.sqrt(sum(x * x for x in r)) for r in rows]
    cos = [[sum(a * b for a, b in zip(rows[i], rows[j])) / (norm[i] * norm[j]) for j in range(len(ids))] for i in range(len(ids))]
    if summary:
        print("embedding %s, rows of %d numbers" % (list(emb.shape), emb.shape[1]))
        for w, i, c in zip(BRIEF_WORDS, ids, cos):
            print("%-9s id %4d  cos %s" % (shown(w), i, " ".join("%5.2f" % x for x in c)))
        return
    n, dim = len(ids), len(rows[0])
    cell, rh, lab = 3, 22, 120
    vmax = max(abs(x) for r in rows for x in r)
    mx = lab + dim * cell + 50
    cc = 30
    W, H = mx + n * cc + 20, 70 + n * rh + 80
    svg = Svg(W, H, tr("Embedding rows"), tr("make figures (tools/figures.py brief-embedding: %s/model.safetensors)") % MODEL)
    svg.text(8, 18, tr("Each id picks one row of the embedding table (%d \u00d7 %d in %s)") % (emb.shape[0], dim, MODEL),
             size=13, weight="bold")
    svg.text(lab, 44, tr("the row: %d numbers (blue below 0, red above)") % dim, size=11, fill="#555")
    svg.text(mx, 44, tr("how alike two rows point (cosine)"), size=11, fill="#555")
    y0 = 54
    for k, (w, i, r) in enumerate(zip(BRIEF_WORDS, ids, rows)):
        y = y0 + k * rh
        svg.text(lab - 8, y + 14, "%s %d" % (shown(w), i), size=12, anchor="end", mono=True)
        for d, v in enumerate(r):
            svg.rect(lab + d * cell, y + 2, cell, rh - 6, brief_diverging(v, vmax))
        for j in range(n):
            c = cos[k][j]
            svg.rect(mx + j * cc, y, cc - 2, rh - 2, brief_diverging(c, 1.0))
            svg.text(mx + j * cc + (cc - 2) / 2, y + 14, "%.2f" % c if j != k else "1", size=9, anchor="middle",
                     fill="white" if c > 0.55 else "#222")
    for j, w in enumerate(BRIEF_WORDS):
        svg.text(mx + j * cc + cc / 2, y0 + n * rh + 6, shown(w), size=10, anchor="end", mono=True, rotate=-60)
    svg.text(8, H - 24, tr("training made the rows of words used alike point alike: gold and silver %.2f, seven and six %.2f, day and night %.2f")
             % (cos[0][1], cos[2][3], cos[6][7]), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-brief-embedding.svg"))


def fig_brief_loss(out, summary=False):
    toks = pieces(BRIEF_VERSE)
    ids = [t[0] for t in toks]
    loss = brief_logprobs(ids)
    mean = sum(loss) / len(loss)
    with open(os.path.join(ROOT, MODEL, "config.json")) as c:
        guess = math.log(json.load(c)["vocab_size"])     # every id equally likely: what an untrained model does
    log = []
    with open(os.path.join(ROOT, MODEL, "train_log.csv")) as f:
        head = f.readline().strip().split(",")
        for line in f:
            r = dict(zip(head, line.strip().split(",")))
            log.append((int(r["tokens"]), float(r["train_loss"]), float(r["val_loss"])))
    if summary:
        for t, l in zip(toks[1:], loss):
            print("%-12s -ln p %6.3f  p %.4f" % (shown(t[2]), l, math.exp(-l)))
        print("mean %.3f nats; guessing ln %d = %.3f; validation loss %.3f -> %.3f over %d tokens of training"
              % (mean, round(math.exp(guess)), guess, log[0][2], log[-1][2], log[-1][0]))
        return
    W, H = 860, 360
    x0, y0, pw, ph = 50, 50, 470, 200
    top = 11.0
    Y = lambda v: y0 + ph - v / top * ph
    svg = Svg(W, H, tr("The loss"), tr("make figures (tools/figures.py brief-loss: ./run fwd %s --dump, %s/train_log.csv)") % (MODEL, MODEL))
    svg.text(8, 18, tr("The loss: how surprised the model is by each real next token, \u2212ln p (nats)"), size=13, weight="bold")
    for v in range(0, 11, 2):
        svg.line(x0, Y(v), x0 + pw, Y(v), "#eee")
        svg.text(x0 - 6, Y(v) + 4, str(v), size=10, anchor="end", fill="#666")
    bw = pw / len(loss)
    for k, (t, l) in enumerate(zip(toks[1:], loss)):
        x = x0 + k * bw
        svg.rect(x + 4, Y(l), bw - 8, Y(0) - Y(l), "#5c7f9f")
        svg.text(x + bw / 2, Y(l) - 4, "%.2f" % math.exp(-l) if math.exp(-l) >= 0.01 else "%.0e" % math.exp(-l),
                 size=9, anchor="middle", fill="#333")
        svg.text(x + bw / 2 + 4, Y(0) + 10, shown(t[2]), size=10, anchor="end", mono=True, rotate=-50)
    svg.line(x0, Y(guess), x0 + pw, Y(guess), "#c33", 1.2, " stroke-dasharray='5,3'")
    svg.line(x0, Y(mean), x0 + pw, Y(mean), "#2f8a3a", 1.2, " stroke-dasharray='2,2'")
    svg.line(x0, 36, x0 + 24, 36, "#c33", 1.2, " stroke-dasharray='5,3'")
    svg.text(x0 + 30, 40, tr("guessing among %d: ln %d = %.2f") % (round(math.exp(guess)), round(math.exp(guess)), guess), size=10, fill="#c33")
    svg.line(x0 + 230, 36, x0 + 254, 36, "#2f8a3a", 1.2, " stroke-dasharray='2,2'")
    svg.text(x0 + 260, 40, tr("this verse's loss, the mean: %.2f") % mean, size=10, fill="#2f8a3a")
    # Right: what training did to the mean over held-out verses.
    cx0, cw = 600, 230
    tmax = log[-1][0]
    CX = lambda t: cx0 + t / tmax * cw
    svg.text(cx0, 40, tr("training lowered the mean loss"), size=10, fill="#555")
    for v in range(0, 11, 2):
        svg.line(cx0, Y(v), cx0 + cw, Y(v), "#eee")
        svg.text(cx0 - 6, Y(v) + 4, str(v), size=10, anchor="end", fill="#666")
    svg.line(cx0, Y(guess), cx0 + cw, Y(guess), "#c33", 1.2, " stroke-dasharray='5,3'")
    for col, k, name in (("#a0641f", 1, "training text"), ("#1f5fa0", 2, "held-out verses")):
        pts = [(r[0], r[k]) for r in log]
        svg.add("<polyline fill='none' stroke='%s' stroke-width='1.6' points='%s'/>"
                % (col, " ".join("%.1f,%.1f" % (CX(t), Y(v)) for t, v in pts)))
    svg.text(CX(tmax), Y(log[-1][2]) - 6, tr("held-out %.2f") % log[-1][2], size=10, anchor="end", fill="#1f5fa0")
    svg.text(CX(tmax), Y(log[-1][1]) + 14, tr("training %.2f") % log[-1][1], size=10, anchor="end", fill="#a0641f")
    svg.text(cx0 + cw / 2, Y(0) + 18, tr("tokens of training text seen: 0 to %.1f million") % (tmax / 1e6), size=10,
             anchor="middle", fill="#555")
    svg.text(cx0 + cw / 2, Y(0) + 32, tr("(%s/train_log.csv, first row after %d tokens)") % (MODEL, log[0][0]), size=10,
             anchor="middle", fill="#555")
    svg.text(8, H - 40, tr("each bar: the token to predict after the ones before it; above it p, the probability the model gave it"),
             size=11, fill="#555")
    svg.text(8, H - 24, tr("an untrained model scores every token ln %d; training nudges every weight so that the real next token gets likelier")
             % round(math.exp(guess)), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-brief-loss.svg"))


def fig_brief_heads(out, summary=False):
    maps, toks = attention_maps()
    layer = len(maps) - 1
    t = toks.index(" earth") - 1          # the " the" that has to predict " earth"
    H = len(maps[layer])
    rows = [maps[layer][h][t][:t + 1] for h in range(H)]
    best = [max(range(t + 1), key=lambda j: r[j]) for r in rows]
    if summary:
        print("layer %d, from %r (position %d):" % (layer, toks[t], t))
        for h, r in enumerate(rows):
            print("  head %d: %s" % (h, " ".join("%s %.2f" % (shown(toks[j]), r[j]) for j in range(t + 1))))
        return
    lab, cw, rh = 90, 72, 62
    W, H_ = max(830, lab + (t + 1) * cw + 40), 60 + H * rh + 110
    svg = Svg(W, H_, tr("Several heads"), tr("make figures (tools/figures.py brief-heads; the float64 reference, tools/qwen2_torch.py)"))
    svg.text(8, 18, tr("Layer %d of %s: four heads look from the same token, \u201c%s\u201d, at different earlier tokens")
             % (layer, MODEL, shown(toks[t])), size=13, weight="bold")
    cols = ["#5c7f9f", "#9f7a5c", "#5c9f6a", "#8a5c9f"]
    for h, r in enumerate(rows):
        y = 44 + h * rh
        svg.text(lab - 10, y + rh / 2, tr("head %d") % h, size=12, anchor="end")
        svg.line(lab, y + rh - 10, lab + (t + 1) * cw, y + rh - 10, "#bbb")
        for j in range(t + 1):
            bh = (rh - 18) * r[j]
            svg.rect(lab + j * cw + 6, y + rh - 10 - bh, cw - 12, bh, cols[h % 4])
            if r[j] >= 0.15:
                svg.text(lab + j * cw + cw / 2, y + rh - 13 - bh, "%.2f" % r[j], size=9, anchor="middle")
    for j in range(t + 1):
        svg.text(lab + j * cw + cw / 2, 44 + H * rh + 6, shown(toks[j]), size=11, anchor="middle", mono=True,
                 weight="bold" if j == t else "normal")
    yb = 44 + H * rh + 30
    svg.text(8, yb, tr("most weight: ") + tr("; ").join(tr("head %d on %s") % (h, shown(toks[b])) for h, b in enumerate(best)), size=11, fill="#333")
    with open(os.path.join(ROOT, MODEL, "config.json")) as c:
        cfg = json.load(c)
    svg.text(8, yb + 18, tr("each head has its own query, key and value projections (%d numbers of the %d); their outputs are put")
             % (cfg["hidden_size"] // cfg["num_attention_heads"], cfg["hidden_size"]), size=11, fill="#555")
    svg.text(8, yb + 34, tr("side by side again and mixed by one more matrix (o_proj): one layer gathers several kinds of context at once"),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-brief-heads.svg"))


def brief_stream(ids, target):
    """The residual stream of the last token of IDS after the embedding and after every attention
    and MLP block (the float64 reference), each read out as the final norm and the LM head would:
    [(name, rms of the addition, rms of the stream, top token id, its p, p of TARGET)]."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch
    import qwen2_torch as q
    model, _ = q.load_folder(os.path.join(ROOT, MODEL), torch.float64)
    adds = []

    def keep(name):
        def hook(mod, inp, outp):
            adds.append((name, outp[0, -1].detach().clone()))
        return hook
    model.model.embed_tokens.register_forward_hook(keep(tr("the embedding")))
    for i, layer in enumerate(model.model.layers):
        layer.self_attn.register_forward_hook(keep(tr("+ layer %d attention") % i))
        layer.mlp.register_forward_hook(keep(tr("+ layer %d MLP") % i))
    with torch.no_grad():
        model(torch.tensor([ids]))
        emb = model.model.embed_tokens.weight
        x, out = None, []
        for name, a in adds:
            x = a if x is None else x + a
            p = torch.softmax(model.model.norm(x) @ emb.T, -1)
            top = int(torch.argmax(p))
            rms = lambda v: float(v.pow(2).mean().sqrt())
            out.append((name, rms(a), rms(x), top, float(p[top]), float(p[target])))
    return out


def fig_brief_residual(out, summary=False):
    toks = pieces(BRIEF_VERSE)
    k = [t[2] for t in toks].index(" earth")
    ids, target = [t[0] for t in toks[:k]], toks[k][0]
    stages = brief_stream(ids, target)
    engine = math.exp(-brief_logprobs(ids + [target])[-1])
    if abs(engine - stages[-1][5]) > 1e-3:
        sys.exit("figures.py brief-residual: the reference reads p = %.4f at the end, ./run fwd gives %.4f" % (stages[-1][5], engine))
    names = {}
    with open(os.path.join(ROOT, MODEL, "tokenizer.json"), encoding="utf-8") as f:
        for s, i in json.load(f)["model"]["vocab"].items():
            names[i] = s.replace("\u0120", " ")
    if summary:
        for name, a, x, top, ptop, pt in stages:
            print("%-22s adds rms %.3f  stream rms %.3f  reads as %-10s %.3f   p(%s) %.3f"
                  % (name, a, x, shown(names[top]), ptop, shown(toks[k][2]), pt))
        print("./run fwd: p(%s) = %.4f" % (shown(toks[k][2]), engine))
        return
    lab, rh = 170, 26
    bx, bw = lab + 20, 150
    px, pw = bx + bw + 290, 150
    W, H = px + pw + 70, 70 + len(stages) * rh + 86
    amax = max(s[1] for s in stages)
    svg = Svg(W, H, tr("The residual stream"), tr("make figures (tools/figures.py brief-residual; the float64 reference, its end checked against ./run fwd)"))
    svg.text(8, 18, tr("The residual stream of \u201c%s\u201d in \u201c\u2026%s\u201d: every block adds to it")
             % (shown(toks[k - 1][2]), "".join(t[2] for t in toks[k - 4:k])), size=13, weight="bold")
    svg.text(bx, 44, tr("what the block adds (rms)"), size=11, fill="#555")
    svg.text(bx + bw + 50, 44, tr("read out now: the likeliest next token"), size=11, fill="#555")
    svg.text(px, 44, "p(%s)" % shown(toks[k][2]), size=11, fill="#555")
    svg.line(lab + 8, 54, lab + 8, 54 + len(stages) * rh, "#5c7f9f", 3)
    for n, (name, a, x, top, ptop, pt) in enumerate(stages):
        y = 54 + n * rh
        svg.text(lab - 4, y + 17, name, size=12, anchor="end")
        svg.rect(bx, y + 5, bw * a / amax, rh - 10, "#bbb" if n == 0 else "#5c7f9f" if n % 2 else "#9fbfdf")   # the embedding, then attention and MLP
        svg.text(bx + bw * a / amax + 4, y + 16, "%.2f" % a, size=10, fill="#555")
        svg.text(bx + bw + 50, y + 17, "%s  %.2f" % (shown(names[top]), ptop), size=12, mono=True)
        svg.rect(px, y + 5, pw, rh - 10, "#f3f1ec")
        svg.rect(px, y + 5, pw * pt, rh - 10, "#e0a040")
        svg.text(px + pw + 6, y + 16, "%.2f" % pt, size=10, fill="#555")
    yb = 54 + len(stages) * rh + 20
    svg.text(8, yb, tr("read out now: the final RMSNorm and the output layer applied to the stream as it is after that block"),
             size=11, fill="#555")
    svg.text(8, yb + 16, tr("(the embedding alone reads as itself: the output layer is the same matrix, tied); the last row is the"),
             size=11, fill="#555")
    svg.text(8, yb + 32, tr("model's answer, p(%s) = %.2f, as ./run fwd computes it") % (shown(toks[k][2]), engine), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-brief-residual.svg"))


FIGURES.update({"brief-tokens": fig_brief_tokens, "brief-embedding": fig_brief_embedding, "brief-loss": fig_brief_loss,
                "brief-heads": fig_brief_heads, "brief-residual": fig_brief_residual})

if __name__ == "__main__":
    sys.exit(main())
