// web/headless.js — opens pages of the browser build in headless Chromium
// and prints what each one's command wrote, for tests/check_web.sh.
//
//   node --experimental-websocket web/headless.js [--timeout S] URL|open:URL|js:EXPR...
//
// Each URL (index.html?cmd=...) is opened in turn in one Chromium; when the
// page's command has ended (window.lantern.status is set), one JSON line:
// {url, status, out (standard output's bytes, base64), err (base64), files
// (what the command wrote: [name, bytes]), text (what #stdout shows),
// firstOutputMs, doneMs}. A page that does not finish
// within the timeout gives {url, timeout: true}. open:URL opens a page
// without waiting for its command ({open: URL}); js:EXPR evaluates EXPR in
// the page open now, while its command runs, and prints {js: EXPR, value}
// (a test of Stop, or of what the page refuses); files:SELECTOR:PATH,...
// puts files in a file input as if the user had picked them, and goes on
// once the page has seen them ({files}); wait
// waits for the command a js: started, and prints what a URL does. Chromium is driven over
// its DevTools protocol; it runs with a fresh profile and no network
// services (the machine may have no network at all).
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const argv = process.argv.slice(2);
let timeoutS = 120;
if (argv[0] === "--timeout") { timeoutS = Number(argv[1]); argv.splice(0, 2); }
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "lantern-web-"));
const browser = spawn(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
  "--user-data-dir=" + profile, "--remote-debugging-port=0", "about:blank"], { stdio: ["ignore", "ignore", "ignore"] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function cleanup() {
  try { browser.kill("SIGKILL"); } catch (e) { /* gone */ }
  try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* gone */ }
}

async function main() {
  let port = null;
  for (let i = 0; i < 300 && !port; i++) {  // Chromium writes its port here once it listens
    try { port = fs.readFileSync(path.join(profile, "DevToolsActivePort"), "utf8").split("\n")[0]; } catch (e) { await sleep(100); }
  }
  if (!port) throw new Error("Chromium did not start (no DevToolsActivePort)");
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const page = targets.find((t) => t.type === "page");
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = () => bad(new Error("DevTools connection failed")); });
  let next = 1;
  const waiting = new Map();
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  };
  const call = (method, params) => new Promise((ok) => {
    const id = next++;
    waiting.set(id, ok);
    ws.send(JSON.stringify({ id, method, params: params || {} }));
  });
  const evaluate = async (expr) => {
    const r = await call("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
    return r.result && r.result.result ? r.result.result.value : undefined;
  };
  const READ = `(() => { const L = window.lantern; if (!L || L.status === null) return null;
    const b64 = (a) => { let s = ""; for (let i = 0; i < a.length; i += 8192) s += String.fromCharCode(...a.slice(i, i + 8192)); return btoa(s); };
    return { status: L.status, out: b64(L.out), err: b64(L.err), files: L.files, text: document.getElementById("stdout").textContent,
             firstOutputMs: L.firstOutputMs, doneMs: L.doneMs }; })()`;
  const finished = async (label) => {
    const t0 = Date.now();
    let got = null;
    while (!got && Date.now() - t0 < timeoutS * 1000) {
      await sleep(100);
      got = await evaluate(READ);
    }
    console.log(JSON.stringify(got ? Object.assign(label, got) : Object.assign(label, { timeout: true })));
  };
  for (const url of argv) {
    if (url === "wait") {  // the command started by the js: before it
      await finished({ wait: true });
      continue;
    }
    if (url.startsWith("files:")) {  // files:SELECTOR:PATH,... as if picked in that file input (a folder input takes a folder)
      const [, selector, paths] = url.match(/^files:([^:]+):(.*)$/);
      const doc = await call("DOM.getDocument", {});
      const node = await call("DOM.querySelector", { nodeId: doc.result.root.nodeId, selector });
      if (!node.result || !node.result.nodeId) throw new Error(selector + ": " + JSON.stringify(node.error || node.result));
      // The input's change event reaches the page after the protocol's call
      // returns, so the next step could read the page before it saw the
      // files. A listener added first (after the page's own, so it runs
      // second) is awaited before going on.
      const sel = JSON.stringify(selector);
      await evaluate(`window.__changed = new Promise((r) => document.querySelector(${sel}).addEventListener("change", () => setTimeout(r, 0), { once: true })); 0`);
      const set = await call("DOM.setFileInputFiles", { nodeId: node.result.nodeId, files: paths.split(",").map((p) => path.resolve(p)) });
      if (set.error) throw new Error(selector + ": " + set.error.message);
      const seen = await evaluate(`Promise.race([window.__changed.then(() => true), new Promise((r) => setTimeout(() => r(false), ${timeoutS * 1000}))])`);
      if (seen !== true) throw new Error(selector + ": the page never saw the picked files");
      console.log(JSON.stringify({ files: selector }));
      continue;
    }
    if (url.startsWith("js:")) {
      console.log(JSON.stringify({ js: url.slice(3), value: await evaluate(url.slice(3)) }));
      continue;
    }
    if (url.startsWith("open:")) {
      await call("Page.navigate", { url: url.slice(5) });
      for (let i = 0; i < 100 && (await evaluate("location.href + ' ' + document.readyState")) !== url.slice(5) + " complete"; i++)
        await sleep(100);
      for (let i = 0; i < 100 && url.includes("cmd=") &&
           (await evaluate("window.lantern && document.getElementById('status').dataset.state")) !== "running"; i++)
        await sleep(100);
      console.log(JSON.stringify({ open: url.slice(5) }));
      continue;
    }
    await call("Page.navigate", { url });
    await finished({ url });
  }
  ws.close();
}
main().then(() => { cleanup(); process.exit(0); }, (e) => { console.error("headless: " + e.message); cleanup(); process.exit(1); });
