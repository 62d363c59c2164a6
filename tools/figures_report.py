#!/usr/bin/python3
"""tools/figures.py's picture of the --report page (book/img/report.png), and the check that it
is current: the PNG carries the facts it was taken with."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_draw import MODEL, ROOT  # noqa: E402


# ----------------------------------------------------------------------------- the report's picture

REPORT_CMD = ["./run", MODEL, "And God said, Let there be light", "--raw", "-n", "32", "--threads", "1", "--report"]
REPORT_FACTS = ("command", "model", "shape", "sampler")   # rows of the report's "The run" table
REPORT_CODE = ("trace_report_html.cpp", "trace_report_draw.cpp")  # the code that lays the page out


def report_facts(page):
    """What the report shows that does not depend on the machine or the clock: the run table's
    command, model, shape and sampler, the prompt and the output."""
    f = {}
    for k in REPORT_FACTS:
        m = re.search(r"<th>%s</th><td>(.*?)</td>" % k, page, re.S)
        f[k] = html_text(m.group(1)) if m else None
    for k, cls in (("prompt", "text"), ("output", "text out")):
        m = re.search(r"<pre class='%s'>(.*?)</pre>" % cls, page, re.S)
        f[k] = html_text(m.group(1)) if m else None
    import hashlib
    h = hashlib.sha256()
    for path in REPORT_CODE:
        with open(os.path.join(ROOT, path), "rb") as src:
            h.update(src.read())
    f["page code"] = "sha256 %s of %s" % (h.hexdigest()[:16], " + ".join(REPORT_CODE))
    return f


def html_text(s):
    import html
    return html.unescape(re.sub(r"<[^>]+>", "", s)).strip()


def png_chunks(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    i, out = 8, []
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        out.append((data[i + 4:i + 8], data[i + 8:i + 8 + n]))
        i += 12 + n
    return out


def png_with_facts(data, facts):
    """The PNG with one tEXt chunk "lantern-report" holding FACTS as JSON (replacing an old one)."""
    import zlib
    body = b"lantern-report\0" + json.dumps(facts, sort_keys=True, ensure_ascii=True).encode()
    chunks = [(t, d) for t, d in png_chunks(data) if not (t == b"tEXt" and d.startswith(b"lantern-report\0"))]
    out = bytearray(data[:8])
    for t, d in chunks[:-1] + [(b"tEXt", body), chunks[-1]]:
        out += len(d).to_bytes(4, "big") + t + d + zlib.crc32(t + d).to_bytes(4, "big")
    return bytes(out)


def png_facts(path):
    """The facts a report.png was taken with, or None."""
    with open(path, "rb") as f:
        for t, d in png_chunks(f.read()):
            if t == b"tEXt" and d.startswith(b"lantern-report\0"):
                return json.loads(d.split(b"\0", 1)[1].decode())
    return None


def report_page(tmp):
    """Run REPORT_CMD in TMP (with ./run and the model linked in, so the page shows the command as a
    reader types it) and return the page."""
    os.symlink(os.path.join(ROOT, "run"), os.path.join(tmp, "run"))
    os.makedirs(os.path.join(tmp, os.path.dirname(MODEL)), exist_ok=True)
    os.symlink(os.path.join(ROOT, MODEL), os.path.join(tmp, MODEL))
    r = subprocess.run(REPORT_CMD, cwd=tmp, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("figures.py report: `%s` failed:\n%s" % (" ".join(REPORT_CMD), r.stderr[-2000:]))
    return os.path.join(tmp, "trace_report.html")


def fig_report(out, summary=False):
    """book/img/report.png: the top of a --report page in headless Chromium (1280 x 2400), with the
    page's machine-independent facts stored in the PNG, so a check can tell a stale picture. A
    picture whose facts are still the page's is kept: only the timings would change."""
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        page = report_page(tmp)
        facts = report_facts(open(page, encoding="utf-8").read())
        if None in facts.values():
            sys.exit("figures.py report: the page lacks %s" % ", ".join(k for k, v in facts.items() if v is None))
        if summary:
            for k, v in facts.items():
                print("%-9s %s" % (k, v))
            return
        target = os.path.join(out, "report.png")
        if os.path.exists(target) and png_facts(target) == facts:
            return "kept"
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if not browser:
            sys.exit("figures.py report: chromium is not installed (make deps)")
        shot = os.path.join(tmp, "shot.png")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--user-data-dir=" + os.path.join(tmp, "profile"), "--window-size=1280,2400",
                        "--screenshot=" + shot, "file://" + page], capture_output=True, timeout=120)
        if not os.path.exists(shot) or os.path.getsize(shot) < 60000:
            sys.exit("figures.py report: chromium made no screenshot of %s" % page)
        with open(shot, "rb") as f:
            data = png_with_facts(f.read(), facts)
    with open(os.path.join(out, "report.png"), "wb") as f:
        f.write(data)


def check_report(path):
    """0 when PATH was taken of what the current code shows; else 1, saying what changed."""
    with tempfile_dir() as tmp:
        now = report_facts(open(report_page(tmp), encoding="utf-8").read())
    was = png_facts(path) if os.path.exists(path) else None
    if was is None:
        print("%s: not made by tools/figures.py report (no facts in it): run make figures" % path)
        return 1
    bad = [k for k in now if was.get(k) != now[k]]
    for k in bad:
        print("%s is stale: its %s is %r, the report now shows %r (run make figures)" % (path, k, was.get(k), now[k]))
    return 1 if bad else 0


def tempfile_dir():
    import tempfile
    return tempfile.TemporaryDirectory()
