#!/usr/bin/python3
"""What every figure of tools/figures.py draws with: running the engine, an SVG canvas, colour
scales, arrows and boxes, and reading the sources a figure takes its numbers from."""
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "trained/kjv"
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
MONO = "font-family='DejaVu Sans Mono, Menlo, Consolas, monospace'"
# The Chinese figures: a CJK face first for the prose; the monospaced stack keeps DejaVu Sans Mono
# first, so tokens and code keep the widths the layout assumes.
FONT_ZH = "font-family='Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, sans-serif'"
MONO_ZH = "font-family='DejaVu Sans Mono, Noto Sans Mono CJK SC, Menlo, Consolas, monospace'"

# ----------------------------------------------------------------------------- the figures' language
#
# Every figure is drawn in English (book/img/) and in Chinese (book/img/zh/). Each label drawn goes
# through tr(): in English it is the string itself; in Chinese, the rendering book/terms.tsv gives
# when the label is one of its terms, else the row of tools/figures_zh.tsv (English, tab, Chinese)
# whose English is the label. A format string keeps its %-conversions in the same order.

LANGS = ("en", "zh")
LANG = "en"
LABELS = os.environ.get("FIGURES_ZH_TSV") or os.path.join(ROOT, "tools", "figures_zh.tsv")   # another: the self-test
CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"
CONVERSION = r"%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z%]"
_labels = None     # (terms, rows): book/terms.tsv's, tools/figures_zh.tsv's
used = set()


def set_lang(lang):
    global LANG
    if lang not in LANGS:
        sys.exit("figures.py: no language %r (there are: %s)" % (lang, ", ".join(LANGS)))
    LANG = lang


def labels():
    """(terms, rows): book/terms.tsv's terms, lower case (a term's name before its parenthesis
    too), and tools/figures_zh.tsv's rows, each English -> Chinese. Stops on a row that repeats
    a term, changes the conversions or uses a rendering the terms table says to avoid."""
    global _labels
    if _labels is not None:
        return _labels
    from book_twin import load_terms
    terms, avoid = {}, []
    for r in load_terms():
        for name in {r["term"], re.sub(r"\s*\(.*\)$", "", r["term"])}:
            terms[name.lower()] = r["zh"]
        avoid += [(a, r["term"], r["zh"]) for a in r["avoid"]]
    rows, problems = {}, []
    with open(LABELS, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            where = "%s:%d" % (os.path.relpath(LABELS, ROOT), n)
            if len(cells) != 2 or not cells[1].strip():
                problems.append("%s: not two cells, English and Chinese" % where)
                continue
            en, zh = cells
            if en in rows:
                problems.append("%s: %r is already in the table" % (where, en))
            if en.lower() in terms:
                problems.append("%s: %r is a term of book/terms.tsv, which gives its Chinese (%s)" % (where, en, terms[en.lower()]))
            if re.findall(CONVERSION, en) != re.findall(CONVERSION, zh):
                problems.append("%s: the Chinese has conversions %s, the English %s" % (where, re.findall(CONVERSION, zh),
                                                                                     re.findall(CONVERSION, en)))
            for a, term, good in avoid:
                if a in zh:
                    problems.append("%s: \"%s\" for \"%s\": the book writes \"%s\" (book/terms.tsv)" % (where, a, term, good))
            rows[en] = zh
    if problems:
        sys.exit("figures.py:\n" + "\n".join(problems))
    _labels = (terms, rows)
    return _labels


def tr(s):
    """The label S in the figure's language (see above)."""
    if LANG == "en":
        return s
    terms, rows = labels()
    zh = rows.get(s, terms.get(s.lower()))
    if zh is None:
        sys.exit("figures.py: the label %r has no Chinese: add a row to tools/figures_zh.tsv" % s)
    used.add(s)
    return zh


def unused_labels():
    """The rows of tools/figures_zh.tsv no figure asked for (after drawing them all in Chinese)."""
    return sorted(set(labels()[1]) - used)


def cols(s):
    """The width of S in columns of a Latin letter: a CJK character counts two."""
    return len(s) + len(re.findall("[%s]" % CJK, s))


def wrap(s, n):
    """S in lines of at most N columns, broken at spaces and between CJK characters."""
    lines, cur = [], ""
    for m in re.finditer(r"(\s*)([%s]|[^\s%s]+)" % (CJK, CJK), s):
        w = m.group(2)
        if cols(cur) + cols(w) > n:
            lines.append(cur)
            cur = w
        else:
            cur = cur + (" " if cur and m.group(1) else "") + w
    lines.append(cur)
    return lines


def run(args):
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("figures.py: `%s` failed:\n%s" % (" ".join(args), r.stderr[-2000:]))
    return r.stdout


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&apos;")


def shown(tok):
    """A token as text in a figure: leading space as a visible middle dot."""
    return tok.replace(" ", "\u00b7").replace("\n", "\u21b5")


def font(mono=False):
    if LANG == "zh":
        return MONO_ZH if mono else FONT_ZH
    return MONO if mono else FONT


class Svg:
    def __init__(self, w, h, title, command):
        self.w, self.h, self.items = w, h, []
        self.title, self.command = title, command

    def add(self, s):
        self.items.append(s)

    def text(self, x, y, s, size=12, anchor="start", mono=False, fill="#222", weight="normal", rotate=None):
        rot = " transform='rotate(%d %.1f %.1f)'" % (rotate, x, y) if rotate is not None else ""
        self.add("<text x='%.1f' y='%.1f' font-size='%g' text-anchor='%s' fill='%s' font-weight='%s' %s%s>%s</text>"
                 % (x, y, size, anchor, fill, weight, font(mono), rot, esc(s)))

    def rect(self, x, y, w, h, fill, stroke="none", extra=""):
        self.add("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' stroke='%s'%s/>" % (x, y, w, h, fill, stroke, extra))

    def line(self, x1, y1, x2, y2, stroke="#222", width=1, extra=""):
        self.add("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='%g'%s/>" % (x1, y1, x2, y2, stroke, width, extra))

    def save(self, path):
        body = "\n".join(self.items)
        cap_y = self.h - 8
        s = ("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d'>\n"
             "<title>%s</title>\n<rect width='100%%' height='100%%' fill='white'/>\n%s\n"
             "<text x='8' y='%d' font-size='10' fill='#777' %s>%s</text>\n</svg>\n"
             % (self.w, self.h, self.w, self.h, esc(self.title), body, cap_y, font(True), esc(tr("made by: %s") % self.command)))
        with open(path, "w", encoding="utf-8") as f:
            f.write(s)


def heat(p):
    """Attention weight 0..1 -> colour (white to dark blue, square-root scale)."""
    t = math.sqrt(max(0.0, min(1.0, p)))
    c0, c1 = (255, 255, 255), (20, 50, 120)
    return "#%02x%02x%02x" % tuple(int(round(a + (b - a) * t)) for a, b in zip(c0, c1))


def encode(text):
    ids = run(["./run", "encode", MODEL, text]).split("\n")[0].split()
    return [int(i) for i in ids]


def pieces(text):
    out = []
    for line in run(["./run", "encode", MODEL, text, "--pieces"]).split("\n")[1:]:
        m = re.match(r'^(\d+)\s+"(.*)"\s+"(.*)"$', line)
        if m:
            out.append((int(m.group(1)), m.group(2), json.loads('"' + m.group(3) + '"')))
    return out


def diverge(v, vmax):
    """A signed value -> colour: blue for negative, white for 0, red for positive (square-root scale)."""
    t = math.sqrt(min(1.0, abs(v) / vmax)) if vmax > 0 else 0.0
    c1 = (178, 34, 34) if v > 0 else (33, 82, 158)
    return "#%02x%02x%02x" % tuple(int(round(255 + (b - 255) * t)) for b in c1)


def arrow(svg, x1, y1, x2, y2, stroke="#555", width=1.2):
    """A line with a small head at (x2, y2)."""
    svg.line(x1, y1, x2, y2, stroke, width)
    a = math.atan2(y2 - y1, x2 - x1)
    pts = [(x2, y2), (x2 - 8 * math.cos(a - 0.4), y2 - 8 * math.sin(a - 0.4)),
           (x2 - 8 * math.cos(a + 0.4), y2 - 8 * math.sin(a + 0.4))]
    svg.add("<polygon points='%s' fill='%s'/>" % (" ".join("%.1f,%.1f" % p for p in pts), stroke))


def box(svg, x, y, w, h, lines, fill="#eef3f8", stroke="#5c7f9f", size=11, mono_from=1):
    """A rounded box with centred lines of text; lines from mono_from on are monospaced."""
    svg.add("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' rx='5' fill='%s' stroke='%s'/>" % (x, y, w, h, fill, stroke))
    y0 = y + h / 2 - (len(lines) - 1) * (size + 3) / 2 + size * 0.35
    for i, s in enumerate(lines):
        svg.text(x + w / 2, y0 + i * (size + 3), s, size=size if i == 0 else size - 1, anchor="middle",
                 mono=i >= mono_from, weight="bold" if i == 0 else "normal", fill="#222" if i == 0 else "#444")


def source(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def need(pattern, text, where):
    """re.search that stops the figure, naming the file, when the code no longer says it."""
    m = re.search(pattern, text, re.M | re.S)
    if not m:
        sys.exit("figures.py: %s no longer matches %r: redraw the figure from the new code" % (where, pattern))
    return m


def chapter_has(chapter, numbers, figure):
    """The numbers a figure prints must be the ones its chapter works by hand (in CHAPTER, or in
    any chapter should the worked example have moved)."""
    text = source(chapter) if os.path.exists(os.path.join(ROOT, chapter)) else ""
    missing = [n for n in numbers if n not in text]
    if missing:
        book = "".join(source("book/" + f) for f in sorted(os.listdir(os.path.join(ROOT, "book"))) if f.endswith(".md"))
        if all(n in book for n in numbers):
            return
        sys.exit("figures.py %s: %s no longer says %s (the figure and the chapter must agree)"
                 % (figure, chapter, ", ".join(missing)))
