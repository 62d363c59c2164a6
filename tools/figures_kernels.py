#!/usr/bin/python3
"""tools/figures.py's figures of the kernels and formats: the paged KV cache, the block formats,
Q4_K's scales, the register tile, the online softmax, a warp's sum."""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_draw import Svg, arrow, box, chapter_has, need, source, tr  # noqa: E402


# ----------------------------------------------------------------------------- paged KV cache

def kv_pages_example():
    """Chapter 13's two requests: A's 40 prompt tokens, B's 37 of which the first 35 are A's.
    Blocks of serve/kv_pages.h's size; only full blocks are shared (kv_pages.cpp:kv_seq_share)."""
    block = int(need(r"int block = (\d+);", source("serve/kv_pages.h"), "serve/kv_pages.h").group(1))
    a_len, b_len, same = 40, 37, 35
    n_a = (a_len + block - 1) // block
    tables = {"A": list(range(n_a))}
    shared = min(same, b_len - 1) // block          # full blocks of the common beginning
    n_b = (b_len + block - 1) // block
    tables["B"] = tables["A"][:shared] + list(range(n_a, n_a + n_b - shared))
    refs = {}
    for t in tables.values():
        for b in t:
            refs[b] = refs.get(b, 0) + 1
    return block, {"A": a_len, "B": b_len}, tables, refs, shared * block


def fig_kvpages(out, summary=False):
    block, lens, tables, refs, b_start = kv_pages_example()
    chapter_has("book/13-serving.md", ["blocks of %d positions" % block, "reads 5: 32-36"], "kvpages")
    if summary:
        print("blocks of %d positions" % block)
        for s, t in tables.items():
            print("request %s (%d tokens): table %s" % (s, lens[s], t))
        print("refs: %s; B's prefill starts at position %d" % (refs, b_start))
        return
    pool = max(refs) + 3
    cw, bw = 9, 9 * block + 14
    W, H = 60 + pool * bw + 60, 400
    svg = Svg(W, H, tr("A paged KV cache with a shared prefix"),
              tr("make figures (tools/figures.py kvpages: chapter 13's two requests, blocks of serve/kv_pages.h)"))
    svg.text(8, 18, tr("Two block tables, one beginning: request B's prompt begins with 35 of A's 40 tokens; blocks of %d positions")
             % block, size=13, weight="bold")
    col = {"A": "#3d72b4", "B": "#d9822b"}
    x0, ypool = 60, 170
    svg.text(x0 - 8, ypool + 18, tr("pool"), size=12, anchor="end", weight="bold")
    for b in range(pool):
        x = x0 + b * bw
        owners = [s for s, t in tables.items() if b in t]
        svg.rect(x, ypool, bw - 14, 28, "#f3f1ec", stroke="#999")
        for s in owners:
            i = tables[s].index(b)
            used = min(block, lens[s] - i * block)
            if len(owners) == 1:
                for p in range(used):
                    svg.rect(x + p * cw + 1, ypool + 2, cw - 2, 24, col[s])
        if len(owners) == 2:
            for p in range(block):
                svg.rect(x + p * cw + 1, ypool + 2, cw - 2, 11, col["A"])
                svg.rect(x + p * cw + 1, ypool + 15, cw - 2, 11, col["B"])
        svg.text(x + (bw - 14) / 2, ypool + 46, "b%d" % b, size=12, anchor="middle", weight="bold", mono=True)
        svg.text(x + (bw - 14) / 2, ypool + 62, tr("refs %d") % refs.get(b, 0) if b in refs else tr("free"), size=11,
                 anchor="middle", fill="#555")
        if b in refs:
            full = any(lens[s] >= (tables[s].index(b) + 1) * block for s in tables if b in tables[s])
            svg.text(x + (bw - 14) / 2, ypool + 78, tr("full: shareable") if full else tr("not full: its own"), size=10,
                     anchor="middle", fill="#2f8a3a" if full else "#999")
    for k, (s, t) in enumerate(tables.items()):
        y = 52 if k == 0 else 300
        svg.text(x0 - 8, y + 18, s, size=13, anchor="end", weight="bold", fill=col[s])
        for i, b in enumerate(t):
            x = x0 + i * (bw - 14) * 0.0 + i * 64
            svg.rect(x, y, 58, 26, "white", stroke=col[s], extra=" stroke-width='1.5'")
            svg.text(x + 29, y + 17, "b%d" % b, size=12, anchor="middle", mono=True)
            lo, hi = i * block, min(lens[s], (i + 1) * block) - 1
            svg.text(x + 29, y + (-6 if k == 0 else 42), "%d-%d" % (lo, hi), size=10, anchor="middle", fill="#555")
            bx = x0 + b * bw + (bw - 14) / 2
            if k == 0:
                arrow(svg, x + 29, y + 27, bx, ypool - 4, col[s])
            else:
                arrow(svg, x + 29, y - 1, bx, ypool + 90, col[s])
        info = (tr("table %s: %d prompt tokens, all read") % (t, lens[s])) if k == 0 else \
            (tr("table %s: %d prompt tokens, prefill starts at %d and reads %d-%d") % (t, lens[s], b_start, b_start, lens[s] - 1))
        svg.text(x0 + len(t) * 64 + 10, y + 17, info, size=11, fill="#333")
    svg.text(8, H - 24, tr("position p of a sequence lives in row p %% %d of block table[p / %d]; a shared block is written by nobody")
             % (block, block), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-kvpages.svg"))


# ----------------------------------------------------------------------------- block formats

def quant_formats():
    """{name: (weights per block, bytes per block)} from gguf/quants.cpp's BLOCK_FORMATS table."""
    t = source("gguf/quants.cpp")
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r'\{DType::\w+, "(\w+)", (\d+), (\d+),', t)}


def fig_quant_blocks(out, summary=False):
    fm = quant_formats()
    for n in ("q8_0", "q4_0", "q4_k"):
        if n not in fm:
            sys.exit("figures.py quant-blocks: gguf/quants.cpp's BLOCK_FORMATS has no %s" % n)
    layouts = {   # (field, bytes, colour, label) in file order: gguf/quants.cpp's block functions
        "q8_0": [("d", 2, "#d9822b", "d, f16"), ("qs", 32, "#3d72b4", tr("32 codes q, int8: w = d\u00b7q"))],
        "q4_0": [("d", 2, "#d9822b", "d, f16"), ("qs", 16, "#3d72b4", tr("32 codes q of 4 bits: w = d\u00b7(q \u2212 8)"))],
        "q4_k": [("d", 2, "#d9822b", "d, f16"), ("dmin", 2, "#a0641f", "dmin, f16"),
                 ("scales", 12, "#2f8a3a", tr("8 scales sc_j and 8 minimums m_j, 6 bits each")),
                 ("qs", 128, "#3d72b4", tr("256 codes q of 4 bits"))],
    }
    for n, fields in layouts.items():
        if sum(f[1] for f in fields) != fm[n][1]:
            sys.exit("figures.py quant-blocks: %s's fields add up to %d bytes, gguf/quants.cpp says %d"
                     % (n, sum(f[1] for f in fields), fm[n][1]))
    if summary:
        for n in layouts:
            w, b = fm[n]
            print("%-5s %3d weights in %3d bytes: %.4g bits per weight" % (n.upper(), w, b, 8.0 * b / w))
        return
    bx, x0 = 5.2, 70
    W, H = x0 + 144 * bx + 40, 560
    svg = Svg(W, H, tr("Q8_0, Q4_0 and Q4_K blocks, byte by byte"),
              tr("make figures (tools/figures.py quant-blocks: sizes from gguf/quants.cpp's BLOCK_FORMATS)"))
    svg.text(8, 18, tr("One block of each format, byte by byte (one narrow column per byte)"), size=13, weight="bold")
    y = 56
    for n, fields in layouts.items():
        w, b = fm[n]
        svg.text(x0 - 8, y + 20, n.upper(), size=13, anchor="end", weight="bold")
        svg.text(x0, y - 8, tr("%d weights in %d bytes: %.4g bits per weight") % (w, b, 8.0 * b / w), size=11, fill="#333")
        x = x0
        for i, (name, nb, col, lab) in enumerate(fields):
            for k in range(nb):
                svg.rect(x + k * bx, y, bx - 0.8, 30, col, extra=" fill-opacity='0.8'")
            ly = y + 44 + (len(fields) - 1 - i) * 13
            svg.line(x + 1, y + 31, x + 1, ly - 9, col, 1)
            a = x_byte(fields, i)
            svg.text(x + 4, ly, tr("%s (bytes %d-%d)") % (lab, a, a + nb - 1) if nb > 1 else tr("%s (byte %d)") % (lab, a),
                     size=10, fill="#333")
            x += nb * bx
        y += 48 + len(fields) * 13 + 24
    # the nibble orders
    y += 6
    svg.text(8, y, tr("Where the 4-bit codes go"), size=12, weight="bold")
    y += 16
    cw = 22
    svg.text(x0 - 8, y + 16, "Q4_0", size=11, anchor="end", weight="bold")
    for j in range(16):
        xx = x0 + j * cw
        svg.rect(xx, y, cw - 2, 12, "#3d72b4", extra=" fill-opacity='0.45'")
        svg.rect(xx, y + 12, cw - 2, 12, "#3d72b4", extra=" fill-opacity='0.9'")
        svg.text(xx + cw / 2 - 1, y + 10, "%d" % (j + 16), size=8, anchor="middle", mono=True)
        svg.text(xx + cw / 2 - 1, y + 22, "%d" % j, size=8, anchor="middle", mono=True, fill="white")
    svg.text(x0 + 16 * cw + 40, y + 10, tr("high nibble of byte j: weight j + 16"), size=10, fill="#333")
    svg.text(x0 + 16 * cw + 40, y + 22, tr("low nibble of byte j: weight j"), size=10, fill="#333")
    y += 44
    svg.text(x0 - 8, y + 16, "Q4_K", size=11, anchor="end", weight="bold")
    for c in range(4):
        xx = x0 + c * 4 * cw
        w4 = 4 * cw - 6
        svg.rect(xx, y, w4, 12, "#3d72b4", extra=" fill-opacity='0.45'")
        svg.rect(xx, y + 12, w4, 12, "#3d72b4", extra=" fill-opacity='0.9'")
        svg.text(xx + w4 / 2, y + 10, "w %d-%d" % (64 * c + 32, 64 * c + 63), size=8, anchor="middle", mono=True)
        svg.text(xx + w4 / 2, y + 22, "w %d-%d" % (64 * c, 64 * c + 31), size=8, anchor="middle", mono=True, fill="white")
        svg.text(xx + w4 / 2, y + 36, tr("bytes %d-%d") % (32 * c, 32 * c + 31), size=9, anchor="middle", fill="#555")
    svg.text(x0 + 16 * cw + 40, y + 10, tr("bytes 32c..32c+31: sub-block 2c+1 in the high nibbles,"), size=10, fill="#333")
    svg.text(x0 + 16 * cw + 40, y + 22, tr("sub-block 2c in the low ones (8 sub-blocks of 32)"), size=10, fill="#333")
    svg.text(8, H - 24, tr("Q4_K decodes w = (d\u00b7sc_j)\u00b7q \u2212 dmin\u00b7m_j for sub-block j: two f16 numbers per 256 weights, "
             "6-bit scales per 32"), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-quant-blocks.svg"))


def x_byte(fields, i):
    """The first byte of field I of a block layout."""
    return sum(f[1] for f in fields[:i])


def kscale_put(sc, mn):
    """gguf/quants.cpp:kscale_put: eight 6-bit scales and minimums into 12 bytes."""
    s = [0] * 12
    for j in range(4):
        s[j] = (sc[j] | (sc[j + 4] >> 4) << 6) & 255
        s[j + 4] = (mn[j] | (mn[j + 4] >> 4) << 6) & 255
        s[j + 8] = ((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4) & 255
    return s


def kscale_get(s, j):
    """gguf/quants.h:kscale_get."""
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, (s[j + 4] >> 4) | (s[j] >> 6) << 4


def fig_q4k_scales(out, summary=False):
    # The chapter's (and tests/test_gguf.cpp's) example: sub-block 5 has scale 37 and minimum 50.
    q = source("gguf/quants.cpp") + source("gguf/quants.h")
    for pat in (r"s\[j\] = \(uint8_t\)\(sc\[j\] \| \(sc\[j \+ 4\] >> 4\) << 6\);",
                r"s\[j \+ 8\] = \(uint8_t\)\(\(sc\[j \+ 4\] & 15\) \| \(mn\[j \+ 4\] & 15\) << 4\);",
                r"sc = \(s\[j \+ 4\] & 15\) \| \(s\[j - 4\] >> 6\) << 4;"):
        need(pat, q, "gguf/quants.cpp:kscale_put / quants.h:kscale_get")
    sc, mn = [0] * 8, [0] * 8
    sc[5], mn[5] = 37, 50
    s = kscale_put(sc, mn)
    for j in range(8):
        if kscale_get(s, j) != (sc[j], mn[j]):
            sys.exit("figures.py q4k-scales: the 12 bytes do not give back sub-block %d" % j)
    chapter_has("book/16-gguf-quantization.md", ["0x%02X" % s[9], "320.5"], "q4k-scales")
    if summary:
        print("12 scale bytes with sc_5 = 37, m_5 = 50: %s" % " ".join("%02x" % b for b in s))
        print("sub-block 5: sc = (0x%02x & 15) | (0x%02x >> 6) << 4 = %d, m = (0x%02x >> 4) | (0x%02x >> 6) << 4 = %d"
              % (s[9], s[1], kscale_get(s, 5)[0], s[9], s[5], kscale_get(s, 5)[1]))
        return
    # which value each bit of the 12 bytes belongs to
    owner = {}
    for j in range(4):
        for b in range(6):
            owner[(j, b)] = ("sc", j, b)
            owner[(j + 4, b)] = ("m", j, b)
        for b in range(6, 8):
            owner[(j, b)] = ("sc", j + 4, b - 6 + 4)
            owner[(j + 4, b)] = ("m", j + 4, b - 6 + 4)
        for b in range(4):
            owner[(j + 8, b)] = ("sc", j + 4, b)
            owner[(j + 8, b + 4)] = ("m", j + 4, b)
    pal = ["#3d72b4", "#d9822b", "#2f8a3a", "#8a5c9f", "#1f9f9f", "#b22222", "#7a7a3d", "#9f5c7a"]
    bw, bh, x0, y0 = 17, 30, 96, 76
    W, H = x0 + 4 * (8 * bw + 18) + 360, y0 + 3 * (bh + 62) + 60
    svg = Svg(W, H, tr("Q4_K's twelve bytes of 6-bit scales"),
              tr("make figures (tools/figures.py q4k-scales: gguf/quants.cpp:kscale_put, quants.h:kscale_get)"))
    svg.text(8, 18, tr("Q4_K: eight 6-bit scales sc_j and eight 6-bit minimums m_j in 12 bytes (bit 7 on the left)"),
             size=13, weight="bold")
    svg.text(8, 36, tr("worked example: sub-block 5 has sc = 37 = 0b100101 and m = 50 = 0b110010, every other one 0"),
             size=11, fill="#555")
    for k in range(12):
        row, colm = k // 4, k % 4
        x, y = x0 + colm * (8 * bw + 18), y0 + row * (bh + 62)
        if colm == 0:
            svg.text(x0 - 10, y + 20, tr("bytes %d-%d") % (4 * row, 4 * row + 3), size=11, anchor="end", weight="bold")
        for b in range(8):
            kind, j, bit = owner[(k, 7 - b)]
            val = (s[k] >> (7 - b)) & 1
            svg.rect(x + b * bw, y, bw - 1, bh, pal[j], extra=" fill-opacity='%s'" % ("0.95" if kind == "sc" else "0.45"))
            svg.text(x + b * bw + bw / 2 - 0.5, y + 19, str(val), size=11, anchor="middle", mono=True,
                     fill="white" if kind == "sc" else "#111", weight="bold" if val else "normal")
        svg.text(x + 4 * bw, y - 6, tr("byte %d = 0x%02X") % (k, s[k]), size=10, anchor="middle", mono=True,
                 weight="bold" if s[k] else "normal")
        # field labels under the byte
        if k < 8:
            kind = "sc" if k < 4 else "m"
            svg.text(x + 1 * bw, y + bh + 13, tr("%s%d hi") % (kind, (k % 4) + 4), size=9, anchor="middle", fill="#444")
            svg.text(x + 5 * bw, y + bh + 13, tr("%s%d (6 bits)") % (kind, k % 4), size=9, anchor="middle", fill="#444")
        else:
            svg.text(x + 2 * bw, y + bh + 13, tr("m%d low 4") % (k - 4), size=9, anchor="middle", fill="#444")
            svg.text(x + 6 * bw, y + bh + 13, tr("sc%d low 4") % (k - 4), size=9, anchor="middle", fill="#444")
    xr = x0 + 4 * (8 * bw + 18) + 20
    sc5, m5 = kscale_get(s, 5)
    lines = [tr("Reading sub-block 5 back (kscale_get, j = 5 \u2265 4):"),
             "sc = (byte 9 & 15) | (byte 1 >> 6) << 4",
             "   = 0b0101 | 0b10 << 4 = %d" % sc5,
             "m  = (byte 9 >> 4) | (byte 5 >> 6) << 4",
             "   = 0b0010 | 0b11 << 4 = %d" % m5,
             "",
             tr("with d = 1, dmin = 0.25, code q = 9:"),
             "w = (1\u00b7%d)\u00b79 \u2212 0.25\u00b7%d = %g" % (sc5, m5, 1 * sc5 * 9 - 0.25 * m5)]
    for i, l in enumerate(lines):
        svg.text(xr, y0 + 10 + i * 17, l, size=11, mono=i > 0, weight="bold" if i == 0 else "normal")
    lx = x0
    for j in range(8):
        svg.rect(lx + j * 64, H - 76, 12, 12, pal[j])
        svg.text(lx + j * 64 + 16, H - 66, "j = %d" % j, size=10)
    svg.text(8, H - 40, tr("dark: a scale's bits; light: a minimum's; sub-blocks 0-3 use 6 low bits of bytes 0-7, "
             "4-7 split 4 low bits (bytes 8-11) and 2 high bits (the tops of bytes 0-7)"), size=11, fill="#555")
    svg.save(os.path.join(out, "fig-q4k-scales.svg"))


# ----------------------------------------------------------------------------- the register tile

def tile_shapes():
    """(name, rows, tokens, registers) of the float tiles, from their sources."""
    out = []
    for name, path, regs, lanes in (("AVX-512", "cpu/x86/kernels_avx512.cpp", 32, 16), ("AVX2", "cpu/x86/kernels_avx2.cpp", 16, 8)):
        m = need(r"^const int ROWS = (\d+), TOKENS = (\d+);", source(path), path)
        out.append((name, int(m.group(1)), int(m.group(2)), regs, lanes, path))
    return out


def fig_tile(out, summary=False):
    shapes = tile_shapes()
    if summary:
        for name, R, T, regs, lanes, path in shapes:
            print("%-8s %d rows x %d tokens: %d accumulators + %d activations + 1 weight = %d of %d registers; "
                  "per step of %d columns %d FMAs for %d loads" % (name, R, T, R * T, T, R * T + T + 1, regs, lanes,
                                                                   R * T, R + T))
        return
    name, R, T, regs, lanes, path = shapes[0]
    cell, x0, y0 = 62, 250, 150
    W, H = x0 + T * cell + 330, y0 + R * cell + 130
    svg = Svg(W, H, tr("The register tile"), tr("make figures (tools/figures.py tile: ROWS and TOKENS of %s)") % path)
    svg.text(8, 18, tr("Prefill's register tile (%s): %d weight rows \u00d7 %d tokens of accumulators") % (name, R, T),
             size=13, weight="bold")
    # the activations: one register per token, a strip of `lanes` columns
    for t in range(T):
        x = x0 + t * cell + 8
        svg.rect(x, 44, cell - 16, 70, "#e7f0e3", stroke="#2f8a3a")
        svg.text(x + (cell - 16) / 2, 62, "x%d" % t, size=12, anchor="middle", weight="bold", fill="#2f8a3a")
        svg.text(x + (cell - 16) / 2, 78, "%d" % lanes, size=10, anchor="middle", fill="#555")
        svg.text(x + (cell - 16) / 2, 90, tr("columns"), size=9, anchor="middle", fill="#555")
        svg.text(x + (cell - 16) / 2, 106, tr("token %d") % t, size=9, anchor="middle", fill="#555")
    svg.text(x0 - 10, 84, tr("%d activation registers") % T, size=11, anchor="end", fill="#2f8a3a")
    for r in range(R):
        y = y0 + r * cell + 8
        svg.rect(x0 - 130, y, 110, cell - 16, "#f8f1ea", stroke="#a0641f")
        svg.text(x0 - 75, y + 18, tr("w%d: row %d") % (r, r), size=12, anchor="middle", weight="bold", fill="#a0641f")
        svg.text(x0 - 75, y + 34, tr("%d columns") % lanes, size=10, anchor="middle", fill="#555")
        for t in range(T):
            x = x0 + t * cell
            svg.rect(x + 3, y0 + r * cell + 3, cell - 6, cell - 6, "#3d72b4", extra=" fill-opacity='0.85' rx='4'")
            svg.text(x + cell / 2, y0 + r * cell + cell / 2 - 2, "acc", size=10, anchor="middle", fill="white")
            svg.text(x + cell / 2, y0 + r * cell + cell / 2 + 12, "%d,%d" % (r, t), size=10, anchor="middle", fill="white",
                     mono=True)
    svg.text(x0 - 75, y0 + R * cell + 18, tr("one weight register,"), size=10, anchor="middle", fill="#a0641f")
    svg.text(x0 - 75, y0 + R * cell + 31, tr("row by row"), size=10, anchor="middle", fill="#a0641f")
    xr = x0 + T * cell + 24
    lines = [tr("per step of %d columns:") % lanes,
             tr("  %d loads of x, %d of w (widened to f32)") % (T, R),
             tr("  %d \u00d7 %d = %d FMAs: acc[r][t] += w_r \u00b7 x_t") % (R, T, R * T),
             tr("  each weight used %d times,") % T,
             tr("  each activation %d times") % R,
             "",
             tr("registers: %d + %d + 1 = %d of %d") % (R * T, T, R * T + T + 1, regs),
             "",
             tr("after the last column: each acc's"),
             tr("%d lanes summed = one dot product") % lanes]
    for i, l in enumerate(lines):
        svg.text(xr, y0 + 6 + i * 16, l, size=11, mono=i > 0 and l.startswith("  "), weight="bold" if i == 0 else "normal")
    others = tr("; ").join(tr("%s: %d \u00d7 %d (%d + %d + 1 = %d of %d registers)") % (n, r_, t_, r_ * t_, t_, r_ * t_ + t_ + 1, g)
                       for n, r_, t_, g, _, _ in shapes[1:])
    svg.text(8, H - 40, tr("blue: the %d accumulators stay in registers over the whole row; %s") % (R * T, others),
             size=11, fill="#555")
    svg.text(8, H - 24, tr("the weight rows come from memory once for %d tokens instead of once per token") % T, size=11, fill="#555")
    svg.save(os.path.join(out, "fig-tile.svg"))


# ----------------------------------------------------------------------------- online softmax

def online_softmax_steps(s, v, blk):
    """[(block scores, m, l, o, rescale factor or None)] and the plain result."""
    steps, m, l, o = [], None, 0.0, 0.0
    for i in range(0, len(s), blk):
        bs, bv = s[i:i + blk], v[i:i + blk]
        m_new = max(bs) if m is None else max(m, max(bs))
        f = None if m is None or m_new == m else math.exp(m - m_new)
        if f is not None:
            l, o = l * f, o * f
        lr, orr = l, o
        for x, y in zip(bs, bv):
            l += math.exp(x - m_new)
            o += math.exp(x - m_new) * y
        m = m_new
        steps.append((bs, m, lr, orr, f, l, o))
    M = max(s)
    L = sum(math.exp(x - M) for x in s)
    return steps, sum(math.exp(x - M) * y for x, y in zip(s, v)) / L, L


def fig_online_softmax(out, summary=False):
    s, v, blk = (2, 1, 3), (10, 20, 30), 2       # chapter 12's example
    steps, plain, L = online_softmax_steps(s, v, blk)
    chapter_has("book/12-performance.md", ["%.3f" % plain, "%.4f" % L, "%.3f" % steps[0][6]], "online-softmax")
    if summary:
        for bs, m, lr, orr, f, l, o in steps:
            print("block %s: m = %g, %s l = %.4f, o = %.3f" % (list(bs), m, "" if f is None else
                                                               "rescale by %.4f (l %.4f, o %.3f), then" % (f, lr, orr), l, o))
        print("out = o / l = %.3f (plain two-pass: %.3f)" % (steps[-1][6] / steps[-1][5], plain))
        return
    bw_ = 270
    W, H = 20 + len(steps) * (bw_ + 56) + 190, 330
    svg = Svg(W, H, tr("The online softmax"), tr("make figures (tools/figures.py online-softmax: chapter 12's example)"))
    svg.text(8, 18, tr("Attention over blocks of keys, one pass: scores s = %s, values v = %s, blocks of %d")
             % (str(s), str(v), blk), size=13, weight="bold")
    x, y0 = 20, 56
    for k, (bs, m, lr, orr, f, l, o) in enumerate(steps):
        lines = [tr("block %d: scores %s") % (k + 1, ", ".join("%g" % z for z in bs))]
        if f is not None:
            lines.append(tr("new max %g: l, o \u00d7 e^(%g\u2212%g) = %.4f") % (m, steps[k - 1][1], m, f))
            lines.append("\u2192 l = %.4f, o = %.3f" % (lr, orr))
        lines.append(tr("add e^(s\u2212m), e^(s\u2212m)\u00b7v:"))
        lines.append("m = %g,  l = %.4f,  o = %.3f" % (m, l, o))
        box(svg, x, y0, bw_, 130, lines, fill="#eef3f8" if f is None else "#fbf1e6", stroke="#5c7f9f" if f is None else "#d9822b")
        if k + 1 < len(steps):
            arrow(svg, x + bw_ + 6, y0 + 65, x + bw_ + 50, y0 + 65)
        x += bw_ + 56
    l_, o_ = steps[-1][5], steps[-1][6]
    box(svg, x, y0, 170, 130, [tr("the end"), "out = o / l", "= %.3f / %.4f" % (o_, l_), "= %.3f" % (o_ / l_)], fill="#e7f0e3",
        stroke="#2f8a3a")
    y1 = y0 + 170
    svg.text(20, y1, tr("Two passes need all %d scores first:  M = %g,  L = \u03a3 e^(s\u2212M) = %.4f,  out = \u03a3 e^(s\u2212M)\u00b7v / L = %.3f")
             % (len(s), max(s), L, plain), size=12, mono=True)
    svg.text(20, y1 + 26, tr("One pass holds only a block: m, l and o are kept relative to the largest score so far, and multiplied"),
             size=11, fill="#555")
    svg.text(20, y1 + 42, tr("by e^(m_old \u2212 m_new) when a block raises it. After the last block m = M, l = L: the same answer."),
             size=11, fill="#555")
    svg.save(os.path.join(out, "fig-online-softmax.svg"))


# ----------------------------------------------------------------------------- the warp's sum

def fig_warp_sum(out, summary=False):
    src = source("cuda/kernels_cuda.cu")
    m = need(r"warp_sum\(float v\) \{\s*for \(int offset = (\d+); offset > 0; offset /= 2\) v \+= __shfl_xor_sync",
             src, "cuda/kernels_cuda.cu:warp_sum")
    first = int(m.group(1))
    lanes = 2 * first
    offsets = []
    o = first
    while o > 0:
        offsets.append(o)
        o //= 2
    rows = [[i + 1 for i in range(lanes)]]     # chapter 14's example: lane i holds i + 1
    for o in offsets:
        rows.append([rows[-1][i] + rows[-1][i ^ o] for i in range(lanes)])
    if summary:
        for k, o in enumerate(offsets):
            print("step %d (xor %2d): lane 0 holds %d, lane 31 %d" % (k + 1, o, rows[k + 1][0], rows[k + 1][lanes - 1]))
        return
    chapter_has("book/14-cuda.md", [str(rows[-1][0])] + ["%d" % rows[k][0] for k in range(1, len(rows))], "warp-sum")
    cw, rh, x0, y0 = 25, 58, 70, 50
    W, H = x0 + lanes * cw + 20, y0 + len(rows) * rh + 40
    svg = Svg(W, H, tr("A warp's sum in 5 steps"), tr("make figures (tools/figures.py warp-sum: cuda/kernels_cuda.cu:warp_sum)"))
    svg.text(8, 18, tr("warp_sum: each lane adds the value of the lane whose number differs in one bit (__shfl_xor_sync)"),
             size=13, weight="bold")
    # which lanes lane 0's value depends on after each step
    dep = [{0}]
    for o in offsets:
        dep.append(dep[-1] | {i ^ o for i in dep[-1]})
    for k, row in enumerate(rows):
        y = y0 + k * rh
        svg.text(x0 - 8, y + 15, tr("start") if k == 0 else tr("xor %d") % offsets[k - 1], size=11, anchor="end", weight="bold")
        if k > 0:
            o = offsets[k - 1]
            for i in range(lanes):
                j = i ^ o
                hot = i in dep[k]
                svg.line(x0 + j * cw + cw / 2, y - rh + 24, x0 + i * cw + cw / 2, y, "#d9822b" if hot else "#e2e2e2",
                         1.2 if hot else 0.6)
        for i, val in enumerate(row):
            hot = i in dep[k]
            svg.rect(x0 + i * cw, y, cw - 2, 22, "#3d72b4" if hot else "#eef3f8", stroke="#9fb7d4")
            svg.text(x0 + i * cw + cw / 2 - 1, y + 15, str(val), size=8 if val >= 100 else 9, anchor="middle", mono=True,
                     fill="white" if hot else "#333")
    for i in range(0, lanes, 4):
        svg.text(x0 + i * cw + cw / 2, y0 - 6, tr("lane %d") % i if i == 0 else str(i), size=9, anchor="middle", fill="#777")
    svg.text(8, H - 26, tr("lane i starts with i + 1; dark: the lanes lane 0's value now sums (1, 2, 4, 8, 16, 32); "
             "every lane ends with %d, in registers, no memory") % rows[-1][0], size=11, fill="#555")
    svg.save(os.path.join(out, "fig-warp-sum.svg"))
