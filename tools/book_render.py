#!/usr/bin/python3
"""The book as HTML: book/*.md, its Chinese twins book/zh/*.md and the exercise pages, rendered
with pandoc into one folder (make book).

  /usr/bin/python3 tools/book_render.py build/book              both languages
  /usr/bin/python3 tools/book_render.py build/book-student --student
                                                                the student edition: no answer key
                                                                and no quoted code of an exercise

English pages go to OUT/, Chinese ones to OUT/zh/ (exercise pages to exercises/ in each). Each
Chinese heading gets its English twin's anchor (tools/book_twin.py checks they pair up one to
one), so a link keeps its anchor in either language and the language switch in the page header
lands on the same section. Each language has its own search index; the search matches
substrings, so Chinese, which has no spaces between words, is found by its characters
(注意力 finds the sections that contain it).
"""
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import ROOT, FENCE, kind_of, Sources   # noqa: E402  (one parser for the book)

# ----------------------------------------------------------------------------- HTML

LUA_FILTER = r"""
local CODE_PATHS = __PATHS__
local ROOT = "__ROOT__"
-- `file.cpp:function` becomes a link to the file (relative to the repository root, ROOT).
local code_ref = "^([%w_./-]+%.%a+):([%a_~][%w_:.~]*)$"
local code_ext = { cpp=1, h=1, hpp=1, c=1, cu=1, cuh=1, py=1, sh=1, js=1, lua=1 }
local placeholder = { file=1, name=1, x=1, foo=1 }
function Code(el)
  local file, ident = el.text:match(code_ref)
  if file then
    local ext = file:match("%.(%a+)$")
    local stem = file:match("([^/]-)%.[^/]*$")
    if code_ext[ext] and not placeholder[stem] then
      return pandoc.Link({el}, ROOT .. (CODE_PATHS[file] or file))
    end
  end
  return el
end
-- A paragraph that is one display formula goes in a box of its own, which scrolls sideways
-- when the formula is wider than the column (book.css: div.math-display).
function Para(el)
  if #el.content == 1 and el.content[1].t == "Math" and el.content[1].mathtype == "DisplayMath" then
    return pandoc.Div({el}, {class = "math-display"})
  end
  return el
end
"""

CSS = """*{box-sizing:border-box}
html{scroll-padding-top:3.5em}
body{margin:0;font:17px/1.55 Georgia,serif;color:#222;background:#fff;overflow-wrap:break-word}
main{max-width:48em;margin:0 auto;padding:1em 1.2em 3em}
code,pre{font:14px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre,pre code,pre>code.sourceCode{white-space:pre!important;overflow-wrap:normal;word-break:normal}
pre{background:#f6f6f2;padding:.7em 1em;overflow-x:auto;border-left:3px solid #d9c98a;max-width:100%}
div.sourceCode{overflow-x:auto;max-width:100%}
pre.try{border-left-color:#6a9f5c} pre.quote{border-left-color:#5c7f9f} pre.illustrative{border-left-color:#bbb}
pre.diagram{background:#fbfbf8;border-left-color:#e4dcc0}
div.cmd{font:13px/1.4 ui-monospace,monospace;color:#666;margin-top:1em;white-space:pre-wrap;overflow-wrap:anywhere}
div.cmd a{color:#5c7f9f} div.cmd.run{margin:.2em 0 0;color:#4a7a3c} div.cmd.run a{color:#3b6e2c}
a{color:#8a5a00} code{overflow-wrap:anywhere} pre code{overflow-wrap:normal}
img{max-width:100%;height:auto}
figure{margin:1.5em 0} figcaption{font-size:14px;color:#555}
table{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%} td,th{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}
div.math-display{overflow-x:auto;overflow-y:hidden;max-width:100%;margin:1em 0}
div.math-display p{margin:.3em 0} math{font-size:1.08em}
blockquote{margin:1em 0;padding:.5em 1em;background:#f3f6f9;border-left:3px solid #5c7f9f}
blockquote p{margin:.4em 0}
details{margin:.3em 0 1.2em;padding:.1em .9em;border-left:3px solid #e4dcc0} summary{cursor:pointer;color:#8a5a00}
header.top{position:sticky;top:0;z-index:10;background:#2b2b2b;color:#eee;font:15px/1.4 system-ui,sans-serif;
  display:flex;flex-wrap:wrap;align-items:center;gap:.4em 1em;padding:.45em 1em}
header.top a{color:#f0d890;text-decoration:none} header.top a.book{font-weight:bold;color:#fff}
header.top .search{margin-left:auto;position:relative}
header.top input{font:14px system-ui,sans-serif;padding:.25em .5em;width:14em;max-width:60vw;border-radius:3px;border:1px solid #888}
#search-results{position:absolute;right:0;top:2.2em;width:26em;max-width:92vw;max-height:70vh;overflow-y:auto;background:#fff;
  color:#222;border:1px solid #aaa;box-shadow:0 4px 12px rgba(0,0,0,.2);display:none;font-size:14px}
#search-results a{display:block;padding:.4em .7em;color:#222;border-bottom:1px solid #eee}
#search-results a:hover,#search-results a.sel{background:#f6f0dc}
#search-results small{display:block;color:#666}
nav#TOC{font:14px/1.45 system-ui,sans-serif;background:#f8f7f2;border:1px solid #e6e0cc;padding:.6em 1em;margin:1em 0}
nav#TOC::before{content:"In this chapter";font-weight:bold;display:block;margin-bottom:.3em}
nav#TOC ul{margin:0;padding-left:1.2em} nav#TOC a{text-decoration:none}
@media (min-width:1400px){nav#TOC{position:fixed;left:1em;top:4em;width:16em;max-height:calc(100vh - 5em);overflow-y:auto;margin:0}}
nav.pager{margin:2em 0;padding-top:1em;border-top:1px solid #ddd;font:15px system-ui,sans-serif}
header.top a.twin{border:1px solid #777;border-radius:3px;padding:0 .4em}
html:lang(zh) body{font-family:Georgia,"Noto Serif CJK SC","Noto Sans CJK SC",serif;line-height:1.7}
html:lang(zh) header.top,html:lang(zh) nav#TOC,html:lang(zh) nav.pager,html:lang(zh) input{font-family:system-ui,"Noto Sans CJK SC",sans-serif}
html:lang(zh) nav#TOC::before{content:"本章内容"}
"""

# The search: one small index of every section (title, words), searched in the page.
SEARCH_JS = r"""(function () {
  var box = document.getElementById("search"), out = document.getElementById("search-results");
  if (!box || !out || !window.BOOK_INDEX) return;
  var root = document.body.getAttribute("data-root") || "";
  var zh = (document.documentElement.lang || "").indexOf("zh") === 0;
  function esc(s) { return s.replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }
  function run() {
    // Substrings, not whole words: Chinese has no spaces, so 注意力 is found wherever its characters are.
    var words = box.value.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1 || /[\u3400-\u9fff]/.test(w); });
    if (!words.length) { out.style.display = "none"; return; }
    var hits = [];
    window.BOOK_INDEX.forEach(function (e) {
      var t = e.text.toLowerCase(), h = e.title.toLowerCase(), score = 0;
      for (var i = 0; i < words.length; i++) {
        var k = t.indexOf(words[i]);
        if (k < 0 && h.indexOf(words[i]) < 0) return;
        score += (h.indexOf(words[i]) >= 0 ? 10 : 0) + (k >= 0 ? 1 : 0);
      }
      hits.push([score, e]);
    });
    hits.sort(function (a, b) { return b[0] - a[0]; });
    out.innerHTML = hits.slice(0, 30).map(function (x) {
      var e = x[1], t = e.text, k = Math.max(0, t.toLowerCase().indexOf(words[0]) - 40);
      return '<a href="' + root + e.url + '">' + esc(e.page) + " &middot; " + esc(e.title) +
             "<small>" + esc((k > 0 ? "\u2026" : "") + t.substr(k, 120)) + "\u2026</small></a>";
    }).join("") || (zh ? '<a>没有找到</a>' : '<a>nothing found</a>');
    out.style.display = "block";
  }
  box.addEventListener("input", run);
  box.addEventListener("focus", run);
  box.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") { out.style.display = "none"; box.blur(); }
    if (ev.key === "Enter") { var a = out.querySelector("a[href]"); if (a) window.location.href = a.href; }
  });
  document.addEventListener("click", function (ev) { if (ev.target !== box && !out.contains(ev.target)) out.style.display = "none"; });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== box) { ev.preventDefault(); box.focus(); }
  });
})();
// The language switch (header a.twin) follows the reader: it points at the section on screen,
// whose heading has the same anchor in both languages.
(function () {
  var twin = document.querySelector("header.top a.twin");
  if (!twin) return;
  var base = twin.getAttribute("href").split("#")[0];
  var heads = Array.prototype.slice.call(document.querySelectorAll("main h1[id], main h2[id], main h3[id]"));
  function update() {
    var id = "";
    for (var i = 0; i < heads.length; i++) {
      if (heads[i].getBoundingClientRect().top <= 90) id = heads[i].id; else break;
    }
    twin.setAttribute("href", base + (id ? "#" + id : ""));
  }
  window.addEventListener("scroll", update, {passive: true});
  window.addEventListener("hashchange", update);
  window.addEventListener("load", update);
  update();
})();
"""


def _rel(from_dir, target):
    return os.path.relpath(target, from_dir).replace(os.sep, "/")


def rewrite_links(text, src_dir, out_page, out, book_dir):
    """Markdown links and images of one page, for the HTML in OUT: chapters -> .html, exercise
    READMEs -> exercises/NAME.html, images copied next to the pages, anything else in the
    repository -> a relative link to the file itself."""
    page_dir = os.path.dirname(out_page)

    def target_of(path):
        full = os.path.normpath(os.path.join(src_dir, path))
        rel = os.path.relpath(full, ROOT).replace(os.sep, "/")
        # The Chinese pages live in OUT/zh/, under the same names as the English ones.
        m = re.fullmatch(r"book/(zh/)?([^/]+)\.md", rel)
        if m:
            return os.path.join(out, m.group(1) or "", m.group(2) + ".html")
        m = re.fullmatch(r"chapters/(?:([\w-]+)/)?README(\.zh)?\.md", rel)
        if m:
            return os.path.join(out, "zh" if m.group(2) else "", "exercises", (m.group(1) or "index") + ".html")
        m = re.fullmatch(r"chapters/([\w-]+?)(\.zh)?\.md", rel)
        if m:
            return os.path.join(out, "zh" if m.group(2) else "", "exercises", m.group(1) + ".html")
        if rel.startswith("book/img/"):
            return os.path.join(out, "img", rel[len("book/img/"):])
        if re.search(r"\.(svg|png|jpg|gif)$", rel) and os.path.isfile(full):
            dest = os.path.join(out, "img", "repo", rel.replace("/", "_"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(full, dest)
            return dest
        return full

    def fix(m):
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path, _, frag = target.partition("#")
        if not path:
            return m.group(0)
        new = _rel(page_dir, target_of(path)) + ("#" + frag if frag else "")
        return "%s(%s)" % (label, new)

    lines, in_fence = [], None
    for line in text.split("\n"):
        fm = FENCE.match(line)
        if fm:
            if in_fence is None:
                in_fence = fm.group(2)[0]
            elif fm.group(2)[0] == in_fence and not fm.group(3):
                in_fence = None
        elif in_fence is None:
            line = re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", fix, line)
        lines.append(line)
    return "\n".join(lines)


# ----------------------------------------------------------------------------- Run buttons

# The sections whose commands a reader runs, in both languages: their ./run
# commands get a link that opens them in the browser build (make web,
# build/web/index.html?cmd=...), and a block the page cannot run says why.
RUN_SECTIONS = {"Observe and verify", "Try it", "观察与验证", "动手试试"}
# The models beside the page: the default one and the test models (make
# models; web/build.sh links them into build/web/models/).
def _web_models():
    names = {"trained/kjv"}
    try:
        with open(os.path.join(ROOT, "tools", "make_models.sh")) as f:
            for line in f:
                if "LANTERN_BIG_MODEL" in line:
                    continue
                for m in re.finditer(r"make_one (\S+)|--out (models/\S+)", line):
                    names.add(m.group(2) or "models/" + m.group(1))
    except OSError:
        pass
    return names
WEB_MODELS = _web_models()
OUTPUT_FLAGS = {"--report", "--trace-json", "--dump", "--graph", "--batch-trace"}
# What the line under a block says, in English and in Chinese: the link's
# label, and why a block cannot run in the page.
RUN_WORDS = {
    "run": ("run in the browser: ", "在浏览器里运行："),
    "terminal": ("in a terminal only: %s", "只能在终端里运行：%s"),
    "shell": ("it uses the shell (a pipe, a redirection or a second program)", "它用到 shell（管道、重定向或另一个程序）"),
    "other": ("it is not a ./run command", "它不是 ./run 命令"),
    "serve": ("the server needs a port, which a page has not", "服务器要监听端口，网页做不到"),
    "bench": ("bench measures the native build", "bench 测的是原生构建的速度"),
    "cuda": ("it needs a GPU", "它需要 GPU"),
    "convert": ("convert writes a model file to disk", "convert 要把模型文件写到磁盘"),
    "file": ("it reads %s, which the page does not have", "它要读 %s，网页里没有这个文件"),
}


def web_runnable(cmd):
    """("", words) when the browser build can run CMD, else (reason key, argument)."""
    import shlex
    if re.search(r"[|;&<>`]|\$\(", cmd):
        return "shell", None
    try:
        words = shlex.split(cmd)
    except ValueError:
        return "shell", None
    if not words or words[0] != "./run":
        return "other", None
    sub = words[1] if len(words) > 1 else ""
    if sub in ("serve", "bench", "convert"):
        return sub, None
    if "--device" in words and "cuda" in words:
        return "cuda", None
    prev = ""
    for w in words[1:]:
        looks_like_file = not w.startswith("-") and ("/" in w or re.search(r"\.(gguf|json|txt|safetensors)$", w))
        if looks_like_file and prev not in OUTPUT_FLAGS and w.rstrip("/") not in WEB_MODELS and \
                not any(w.startswith(m + "/") for m in WEB_MODELS):
            return "file", w
        prev = w
    return "", words


def run_links(cmds, root, page_lang):
    """The line under a block: a link per command the page can run, or why it cannot."""
    from urllib.parse import quote
    def words(key):
        return RUN_WORDS[key][page_lang == "zh"]
    links, why = [], None
    for c in cmds:
        key, arg = web_runnable(c)
        if key:
            why = why or (words(key) % arg if arg else words(key))
        else:
            links.append('<a class="run" href="%s../web/index.html?cmd=%s">&#9654; %s</a>' % (
                root, quote(c, safe=""), html.escape(c)))
    if links:
        return '<div class="cmd run">%s%s</div>' % (words("run"), " &middot; ".join(links))
    if why:
        return '<div class="cmd run">%s</div>' % (words("terminal") % html.escape(why))
    return None


def mark_blocks(text, code_href, page_lang="en", root=""):
    """Fence info strings become classes pandoc understands; checked and illustrative blocks
    get a caption line saying what they are, in the page's language (the command, the file
    and the reason are the info string's, the same in both)."""
    lines = []
    section, src, fence_end = "", text.split("\n"), None
    for i, line in enumerate(src):
        if fence_end is not None:
            if i == fence_end:
                fence_end = None
            lines.append(line)
            continue
        h = re.match(r"##\s+(.*?)\s*(\{#[^}]*\})?\s*$", line)
        if h:
            section = h.group(1)
        m = FENCE.match(line)
        if m and m.group(3):
            kind, arg = kind_of(m.group(3))
            lang = m.group(3).split()[0]
            cap = None
            # The block's own lines, up to its closing fence.
            end = next((j for j in range(i + 1, len(src))
                        if FENCE.match(src[j]) and FENCE.match(src[j]).group(2)[0] == m.group(2)[0]
                        and len(FENCE.match(src[j]).group(2)) >= len(m.group(2)) and not FENCE.match(src[j]).group(3)),
                       len(src))
            fence_end = end
            run = None
            if section in RUN_SECTIONS and kind in ("try", "output"):
                cmds = [arg] if kind == "output" else [l.strip() for l in src[i + 1:end]
                                                       if l.strip() and not l.strip().startswith("#")]
                run = run_links(cmds, root, page_lang)
            if kind == "try":
                line = m.group(1) + m.group(2) + " {.sh .try}"
            elif kind == "output":
                cap = "$ " + html.escape(arg)
                line = m.group(1) + m.group(2) + " {.text .output}"
            elif kind == "quote":
                cap = FRAME[page_lang]["quote"] % ('<a href="%s">%s</a>' % (html.escape(code_href(arg.split(":")[0])), html.escape(arg)))
                line = m.group(1) + m.group(2) + " {.%s .quote}" % lang
            elif kind == "illustrative":
                cap = FRAME[page_lang]["illustrative"] + html.escape(arg)
                line = m.group(1) + m.group(2) + " {.%s .illustrative}" % lang
            elif kind in ("diagram", "sketch"):
                line = m.group(1) + m.group(2) + " {.%s .%s}" % (lang, kind)
            else:
                line = m.group(1) + m.group(2) + " " + lang
            if cap:
                lines += ["```{=html}", '<div class="cmd">%s</div>' % cap, "```", ""]
            if run:
                lines += ["```{=html}", run, "```", ""]
        lines.append(line)
    return "\n".join(lines)


def pandoc_page(md, target, title, root, lua, before, after, toc, lang="en"):
    # TeX math ($...$ inline, $$...$$ display) becomes MathML, which the browser draws itself:
    # nothing is fetched, no script runs.
    # east_asian_line_breaks: a line break between two Chinese characters is no space (a
    # Chinese paragraph wrapped in the source reads as one run of text, as it should).
    fmt = "markdown+east_asian_line_breaks" if lang.startswith("zh") else "markdown"
    args = ["pandoc", "--from", fmt, "--to", "html5", "--standalone", "--mathml",
            "--lua-filter", lua, "--css", root + "book.css", "--metadata", "pagetitle=" + title,
            "--metadata", "lang=" + lang,
            "--include-before-body", before, "--include-after-body", after, "-o", target]
    if toc:
        args[1:1] = ["--toc", "--toc-depth=3"]
    return subprocess.run(args, input=md, text=True, capture_output=True)


def section_index(page_html, url, page_title):
    """(title, anchor, text) of each section of a rendered page, for the search."""
    body = re.split(r"<body\b[^>]*>", page_html, maxsplit=1)[-1]
    body = re.sub(r'<nav id="TOC".*?</nav>', "", body, flags=re.S)
    body = re.sub(r"<(header|script)\b.*?</\1>", "", body, flags=re.S)
    # pandoc wraps long lines, a heading's tag too ("<h2\nid=..."): any whitespace.
    parts = re.split(r'<h([1-3])\s+id="([^"]*)"[^>]*>(.*?)</h\1>', body, flags=re.S)
    out = []
    def clean(h):
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", h)).split())
    first = clean(parts[0])
    if first:
        out.append({"page": page_title, "title": page_title, "url": url, "text": first[:4000]})
    for k in range(1, len(parts) - 3, 4):
        anchor, title, text = parts[k + 1], clean(parts[k + 2]), clean(parts[k + 3])
        out.append({"page": page_title, "title": title, "url": url + "#" + anchor, "text": text[:4000]})
    return out


# ----------------------------------------------------------------------------- the student edition

def exercise_functions():
    """{function: exercise} for every function an exercise has the student write
    (chapters/build_exercise.sh's table). bug-hunt's stub is the engine's own code with
    one line changed, and family's answer is a table row the engine lacks: quoting the
    engine's code gives nothing away for them, so they are left out."""
    path = os.path.join(ROOT, "chapters", "build_exercise.sh")
    out = {}
    if not os.path.isfile(path):
        return out
    table = re.search(r'^table="\n(.*?)^"', open(path, encoding="utf-8").read(), re.S | re.M)
    for line in (table.group(1) if table else "").split("\n"):
        words = line.split()
        if len(words) >= 3 and words[0] not in ("bug-hunt", "family"):
            for f in words[2:]:
                out.setdefault(f, words[0])
    return out


def student_edition(text, hidden, zh=False):
    """One page for the student edition (make book STUDENT=1): a quoted exercise function
    becomes a line naming its exercise, and a link to the answer key keeps only its words.
    zh: the page is a Chinese chapter (book/zh/), so the line is Chinese and links the Chinese
    exercise page."""
    lines, skipping = [], None
    for line in text.split("\n"):
        fm = FENCE.match(line)
        if skipping is not None:
            if fm and fm.group(2)[0] == skipping and not fm.group(3):
                skipping = None
            continue
        if fm and fm.group(3):
            kind, arg = kind_of(fm.group(3))
            func = arg.split(":")[-1] if kind == "quote" and ":" in arg else None
            if func in hidden:
                if zh:
                    lines.append("*`%s` 的代码就是[练习 %s](../../chapters/%s/README.zh.md)的答案，学生版不收录。*"
                                 % (arg, hidden[func], hidden[func]))
                else:
                    lines.append("*The code of `%s` is the [%s exercise](../chapters/%s/README.md); the student "
                                 "edition leaves it out.*" % (arg, hidden[func], hidden[func]))
                skipping = fm.group(2)[0]
                continue
        lines.append(line)
    text = "\n".join(lines)
    return re.sub(r"\[([^\]]*)\]\((?:[^)\s]*/)?answers(?:\.zh)?\.md(?:#[^)\s]*)?\)", r"\1", text)


# The words of the page frame, in each language.
FRAME = {
    "en": {"contents": "contents", "exercises": "exercises", "prev": "&larr; previous", "next": "next &rarr;",
           "search": "search the book (/)", "search_label": "search the book", "twin": "中文",
           "twin_title": "这一节的中文版", "hreflang": "zh-CN", "student": " (the student edition)",
           "quote": "from %s", "illustrative": "illustrative, not checked: "},
    "zh": {"contents": "目录", "exercises": "练习", "prev": "&larr; 上一页", "next": "下一页 &rarr;",
           "search": "搜索本书 (/)", "search_label": "搜索本书", "twin": "English",
           "twin_title": "this section in English", "hreflang": "en", "student": "（学生版）",
           "quote": "摘自 %s", "illustrative": "示意，不检查："},
}


def pages_of(lang, book_dir, student):
    """(source, output path relative to OUT, is_chapter) of every page of one language."""
    zh = lang == "zh"
    sub = "zh/" if zh else ""
    chapters = sorted(glob.glob(os.path.join(book_dir, "zh", "*.md") if zh else os.path.join(book_dir, "*.md")))
    ch = os.path.join(ROOT, "chapters")
    suffix = ".zh.md" if zh else ".md"
    readme = os.path.join(ch, "README" + suffix)
    guides = sorted(f for f in glob.glob(os.path.join(ch, "*" + suffix))
                    if not f.endswith("README" + suffix) and (zh or not f.endswith(".zh.md")))
    exercises = ([readme] if os.path.isfile(readme) else []) + guides + \
        [f for f in sorted(glob.glob(os.path.join(ch, "*", "README" + suffix)))]
    if student:   # the answer key is no page of the student edition
        exercises = [f for f in exercises if not os.path.basename(f).startswith("answers")]
    out = [(c, sub + os.path.basename(c)[:-3] + ".html", True) for c in chapters]
    for f in exercises:
        d = os.path.basename(os.path.dirname(f))
        name = d if d != "chapters" else "index" if os.path.basename(f).startswith("README") \
            else os.path.basename(f)[:-len(suffix)]
        out.append((f, sub + "exercises/" + name + ".html", False))
    return out


def heading_ids(page_html):
    """The anchors of a rendered page's headings, in order (pandoc may wrap a long heading's
    tag after its name: "<h2\nid=...")."""
    body = re.sub(r'<nav id="TOC".*?</nav>', "", page_html, flags=re.S)
    return re.findall(r'<h[1-6]\s+id="([^"]*)"', body)


def with_ids(text, ids):
    """A Chinese page whose headings take its English twin's anchors, one to one, in order
    (tools/book_twin.py checks the two have the same headings)."""
    lines, in_fence, k = [], None, 0
    for line in text.split("\n"):
        fm = FENCE.match(line)
        if fm:
            if in_fence is None:
                in_fence = fm.group(2)[0]
            elif fm.group(2)[0] == in_fence and not fm.group(3):
                in_fence = None
        elif in_fence is None and re.match(r"^#{1,6} ", line) and k < len(ids):
            line = line.rstrip() + " {#%s}" % ids[k]
            k += 1
        lines.append(line)
    return "\n".join(lines)


def render(out, student=False, book_dir=None):
    book_dir = os.path.abspath(book_dir or os.path.join(ROOT, "book"))
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if not shutil.which("pandoc"):
        print("make book: pandoc is missing (make deps installs it)")
        return 1
    src = Sources()
    hidden = exercise_functions() if student else {}
    if student:   # nor any stale copy of the answer key
        for stale in glob.glob(os.path.join(out, "exercises", "answers*.html")) + \
                glob.glob(os.path.join(out, "zh", "exercises", "answers*.html")):
            os.remove(stale)
    # Bare file names in code references (gen_model.cpp) resolve to their real paths.
    paths = {}
    for f in src.files:
        paths.setdefault(os.path.basename(f), f)
        paths[f] = f
    table = "{" + ",".join('["%s"]="%s"' % (k, v) for k, v in paths.items()) + "}"
    with open(os.path.join(out, "book.css"), "w") as f:
        f.write(CSS)
    with open(os.path.join(out, "search.js"), "w") as f:
        f.write(SEARCH_JS)
    img = os.path.join(book_dir, "img")
    if os.path.isdir(img):
        shutil.copytree(img, os.path.join(out, "img"), dirs_exist_ok=True)
    tmp = os.path.join(out, ".tmp")
    os.makedirs(tmp, exist_ok=True)

    def title_of(text, name):
        return next((l.lstrip("# ").strip() for l in text.split("\n") if l.startswith("# ")), name)

    langs = {lang: pages_of(lang, book_dir, student) for lang in ("en", "zh")}
    # An English page's twin is the Chinese page with the same output name under zh/.
    outputs = {lang: set(o for _, o, _ in langs[lang]) for lang in langs}
    ids = {}            # English output -> its headings' anchors, for the Chinese twin
    counts = {}
    for lang in ("en", "zh"):
        words = FRAME[lang]
        pages, texts = [], {}
        for path, rel_out, is_chapter in langs[lang]:
            with open(path, encoding="utf-8") as f:
                t = f.read()
            if student:
                t = student_edition(t, hidden, zh=(lang == "zh" and is_chapter))
            texts[path] = t
            pages.append((path, rel_out, is_chapter, title_of(t, os.path.basename(rel_out)[:-5])))
        index = []
        lang_root = "zh/" if lang == "zh" else ""
        for k, (path, rel_out, is_chapter, title) in enumerate(pages):
            target = os.path.join(out, rel_out)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            root = "../" * rel_out.count("/")              # to OUT
            lroot = "../" * (rel_out.count("/") - lang_root.count("/"))   # to this language's top
            lua = os.path.join(tmp, "links%d.lua" % rel_out.count("/"))
            with open(lua, "w") as f:
                f.write(LUA_FILTER.replace("__PATHS__", table).replace("__ROOT__", root + "../../"))
            seq = [p for p in pages if p[2] == is_chapter]
            i = seq.index(pages[k])
            prev_, next_ = (seq[i - 1] if i > 0 else None), (seq[i + 1] if i + 1 < len(seq) else None)
            href = lambda p: _rel(os.path.dirname(target), os.path.join(out, p[1]))
            top = ['<header class="top"><a class="book" href="%sindex.html">Lantern</a>' % lroot,
                   '<a href="%sindex.html">%s</a>' % (lroot, words["contents"]),
                   '<a href="%sexercises/index.html">%s</a>' % (lroot, words["exercises"])]
            if prev_:
                top.append('<a href="%s" title="%s">%s</a>' % (href(prev_), html.escape(prev_[3]), words["prev"]))
            if next_:
                top.append('<a href="%s" title="%s">%s</a>' % (href(next_), html.escape(next_[3]), words["next"]))
            twin_out = rel_out[3:] if lang == "zh" else "zh/" + rel_out
            if twin_out in outputs["en" if lang == "zh" else "zh"]:
                top.append('<a class="twin" id="twin" href="%s" hreflang="%s" title="%s">%s</a>'
                           % (_rel(os.path.dirname(target), os.path.join(out, twin_out)), words["hreflang"],
                              words["twin_title"], words["twin"]))
            top.append('<span class="search"><input id="search" type="search" placeholder="%s" '
                       'aria-label="%s" autocomplete="off"><span id="search-results"></span></span></header>'
                       % (words["search"], words["search_label"]))
            before = os.path.join(tmp, "before.html")
            with open(before, "w") as f:
                f.write("".join(top) + '\n<main data-root="%s">' % lroot)
            pager = ['</main><nav class="pager"><main>']
            if prev_:
                pager.append('<a href="%s">&larr; %s</a> &middot; ' % (href(prev_), html.escape(prev_[3])))
            pager.append('<a href="%sindex.html">%s</a>' % (lroot, words["contents"]))
            if next_:
                pager.append(' &middot; <a href="%s">%s &rarr;</a>' % (href(next_), html.escape(next_[3])))
            pager.append("</main></nav>")
            pager.append('<script src="%ssearch-index.js"></script><script src="%ssearch.js"></script>' % (lroot, root))
            after = os.path.join(tmp, "after.html")
            with open(after, "w") as f:
                f.write("".join(pager))
            text = rewrite_links(texts[path], os.path.dirname(path), target, out, book_dir)
            if lang == "zh" and rel_out[3:] in ids:
                text = with_ids(text, ids[rel_out[3:]])
            code_href = lambda fname: root + "../../" + paths.get(fname, fname)
            md = mark_blocks(text, code_href, lang, root)
            r = pandoc_page(md, target, title, root, lua, before, after,
                            toc=not os.path.basename(target).startswith(("00-", "index")),
                            lang="zh-CN" if lang == "zh" else "en")
            if r.returncode != 0:
                print("make book: pandoc failed on %s:\n%s" % (os.path.relpath(path, ROOT), r.stderr))
                return 1
            with open(target, encoding="utf-8") as f:
                page = f.read().replace("<body>", '<body data-root="%s">' % lroot, 1)
            with open(target, "w", encoding="utf-8") as f:
                f.write(page)
            if lang == "en":
                ids[rel_out] = heading_ids(page)
            index += section_index(page, _rel(os.path.join(out, lang_root), target), title)
            if os.path.basename(path).startswith("00-"):
                shutil.copyfile(target, os.path.join(out, lang_root, "index.html"))
        with open(os.path.join(out, lang_root, "search-index.js"), "w") as f:
            f.write("window.BOOK_INDEX = " + json.dumps(index, ensure_ascii=False) + ";\n")
        counts[lang] = (sum(1 for p in pages if p[2]), sum(1 for p in pages if not p[2]))
    shutil.rmtree(tmp, ignore_errors=True)
    print("make book: %d chapters and %d exercise pages in English, %d and %d in Chinese -> %s/index.html, "
          "%s/zh/index.html%s" % (counts["en"] + counts["zh"] + (os.path.relpath(out, ROOT),) * 2 +
                                  (FRAME["en"]["student"] if student else "",)))
    return 0


def main():
    import argparse
    ap = argparse.ArgumentParser(description="Render the Lantern book (both languages) to HTML.")
    ap.add_argument("out", help="the folder to write (build/book)")
    ap.add_argument("--student", action="store_true",
                    help="the student edition, without the answer key and the exercises' code")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    args = ap.parse_args()
    return render(args.out, args.student, args.book_dir)


if __name__ == "__main__":
    sys.exit(main())
