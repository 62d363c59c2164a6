#!/usr/bin/python3
"""The Chinese pages of the HTML book in headless Chromium, driven over the DevTools protocol
(tests/check_book_html.sh runs this after `make book`'s rendering):

  1. the font: the Chinese text of a chapter is drawn with a CJK font Debian installs (Noto CJK,
     package fonts-noto-cjk), as Chromium reports for the text node (CSS.getPlatformFontsForNode),
     not with a fallback of the system's choosing;
  2. the twins: on an English chapter scrolled to a section, the language switch points at the
     Chinese page with that section's anchor, and that anchor is a heading of the Chinese page
     (and back);
  3. the search: on a Chinese page, typing 注意力 lists Chinese sections that contain it; on an
     English page, typing attention lists English ones.

The protocol runs over a pipe (--remote-debugging-pipe: messages are JSON, each ended by a NUL
byte, read from fd 3 and written to fd 4 of the browser), so nothing but Python's standard
library is needed.

Usage: tests/book_browser_zh.py BOOK_DIR     (the folder tools/book_render.py wrote)
Prints one line per check, "ok ..." or "FAIL ..."; exits 1 when any check fails.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp()
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # The browser reads commands on its fd 3 and writes answers on its fd 4.
        def fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--user-data-dir=" + self.profile, "--remote-debugging-pipe", "--window-size=1280,900"],
            preexec_fn=fds, pass_fds=(3, 4),   # kept open after fds() has put the pipes there
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while time.time() < end:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"].get("message")))
                    return m.get("result", {})
                self.events.append(m)
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its pipe during %s" % method)
            self.buf += chunk
        raise RuntimeError("%s: no answer within %d s" % (method, timeout))

    def open(self, url):
        """A new tab at url, loaded; returns its session."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "DOM", "CSS", "Runtime"):
            self.send(domain + ".enable", session=s)
        self.send("Page.navigate", {"url": url}, session=s)
        self.wait(s, "document.readyState === 'complete'")
        return s

    def eval(self, s, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, session=s)
        if "exceptionDetails" in r:
            raise RuntimeError("script error: %s" % r["exceptionDetails"].get("text"))
        return r["result"].get("value")

    def wait(self, s, cond, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if self.eval(s, "!!(%s)" % cond):
                return
            time.sleep(0.1)
        raise RuntimeError("timed out waiting for %s" % cond)

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        self.proc.kill()
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.profile])


def main():
    book = os.path.abspath(sys.argv[1])
    failed = 0

    def report(ok, what):
        nonlocal failed
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        failed += not ok

    zh_page = os.path.join(book, "zh", "06-attention-kv-cache.html")
    en_page = os.path.join(book, "06-attention-kv-cache.html")
    for p in (zh_page, en_page):
        if not os.path.isfile(p):
            print("FAIL  %s is missing (was the Chinese chapter rendered?)" % os.path.relpath(p, book))
            return 1
    b = Browser()
    try:
        # 1. The font Chromium draws the Chinese text of the first paragraph with.
        s = b.open("file://" + zh_page)
        doc = b.send("DOM.getDocument", {"depth": -1}, session=s)["root"]["nodeId"]
        node = b.send("DOM.querySelector", {"nodeId": doc, "selector": "main p"}, session=s)["nodeId"]
        fonts = b.send("CSS.getPlatformFontsForNode", {"nodeId": node}, session=s)["fonts"]
        names = ", ".join("%s (%d glyphs)" % (f["familyName"], f["glyphCount"]) for f in fonts)
        cjk = [f for f in fonts if "CJK" in f["familyName"] and f["glyphCount"] > 0]
        report(bool(cjk), "zh/06-attention-kv-cache.html: its first paragraph is drawn with %s" % names)
        lang = b.eval(s, "document.documentElement.lang")
        report(lang == "zh-CN", "zh/06-attention-kv-cache.html: <html lang=\"%s\">" % lang)

        # 3. The search, in Chinese: 注意力 finds Chinese sections that contain it.
        hits = b.eval(s, """(function () {
            var box = document.getElementById('search');
            box.value = '注意力'; box.dispatchEvent(new Event('input'));
            return Array.prototype.map.call(document.querySelectorAll('#search-results a[href]'),
                function (a) { return [a.getAttribute('href'), a.textContent]; });
        })()""")
        good = [h for h in hits if "注意力" in h[1]]
        same_lang = all(not h[0].startswith("../") or h[0].startswith("../exercises/") for h in hits)
        report(len(good) >= 3 and same_lang, "search 注意力 on a Chinese page: %d sections, e.g. %s"
               % (len(good), good[0][0] if good else "none"))
        hit_pages = set(h[0].split("#")[0] for h in good)
        report(any(p.startswith("06-") for p in hit_pages),
               "search 注意力 finds chapter 6's Chinese page (%s)" % ", ".join(sorted(hit_pages)[:6]))

        # 2. The twins: an English chapter scrolled to a section; its switch; the Chinese page there.
        e = b.open("file://" + en_page)
        sec = b.eval(e, """(function () {
            var h = document.querySelectorAll('main h2[id]')[2];
            h.scrollIntoView(); window.dispatchEvent(new Event('scroll'));
            return [h.id, h.textContent];
        })()""")
        href = b.eval(e, "document.getElementById('twin').getAttribute('href')")
        report(href == "zh/06-attention-kv-cache.html#" + sec[0],
               "06-attention-kv-cache.html scrolled to \"%s\": the switch points at %s" % (sec[1], href))
        z = b.open("file://" + os.path.join(book, href.split("#")[0]) + "#" + sec[0])
        twin = b.eval(z, "(function () { var h = document.getElementById(%s); "
                         "return h ? [h.tagName, h.textContent] : null; })()" % json.dumps(sec[0]))
        report(bool(twin) and twin[0] == "H2", "zh/06-attention-kv-cache.html#%s is the heading \"%s\""
               % (sec[0], twin[1] if twin else "(none)"))
        back = b.eval(z, "window.dispatchEvent(new Event('scroll')), document.getElementById('twin').getAttribute('href')")
        report(back == "../06-attention-kv-cache.html#" + sec[0], "and its switch points back at %s" % back)

        # 3b. The search in English stays English.
        hits = b.eval(e, """(function () {
            var box = document.getElementById('search');
            box.value = 'attention'; box.dispatchEvent(new Event('input'));
            return Array.prototype.map.call(document.querySelectorAll('#search-results a[href]'),
                function (a) { return a.getAttribute('href'); });
        })()""")
        report(len(hits) >= 3 and not any(h.startswith("zh/") for h in hits),
               "search attention on an English page: %d English sections" % len(hits))
    except RuntimeError as ex:
        report(False, "the browser check stopped: %s" % ex)
    finally:
        b.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
