// web/worker.js — one command of ./run, in a Worker: the page stays
// responsive while the engine computes, and Stop ends it by terminating the
// Worker. Each command gets a fresh Worker and so a fresh module instance:
// the engine keeps globals (log level, watch filter, kernel set, seed) that
// a second run in the same instance would inherit.
//
// Message in:  {args: [...], stdin: "lines", local: [{path, file}]}
//   args   the command line without "./run";
//   stdin  what the chat reads as its standard input (the page's input box);
//   local  files the user picked (a model folder or a GGUF), as File objects:
//          read here, never uploaded.
// Messages out: {out: Uint8Array} / {err: Uint8Array} as the engine writes,
// {file: path, data: Uint8Array} for each file the command wrote (a
// --report page), and last {done: exit status} or {fail: message}.
"use strict";
importScripts("lantern.js");

const ROOT = "/lantern";  // the working directory: trained/kjv is found there, as beside ./run

// Standard output and error go to the page as raw bytes, so the page
// shows exactly the bytes ./run would print; batched, one message at most
// every 40 ms, and whatever is left when the command ends.
function stream(kind) {
  let buf = new Uint8Array(4096), n = 0, last = 0;
  const flush = () => {
    if (n) postMessage({ [kind]: buf.slice(0, n) });
    n = 0;
    last = Date.now();
  };
  const put = (byte) => {
    if (byte === null) return flush();
    if (n === buf.length) {
      const bigger = new Uint8Array(buf.length * 2);
      bigger.set(buf);
      buf = bigger;
    }
    buf[n++] = byte;
    if (Date.now() - last > 40) flush();
  };
  return { put, flush };
}

// The model files a command names: every file of files.json (the page's
// own models) that a word of the command is, or is the folder of. A
// command that names none runs on the default model, trained/kjv.
function needed(manifest, args) {
  const all = Object.keys(manifest), want = new Set();
  for (const a of args) {
    const w = a.replace(/^\.\//, "").replace(/\/+$/, "");
    for (const p of all) if (p === w || p.startsWith(w + "/")) want.add(p);
  }
  if (!want.size) for (const p of all) if (p.startsWith("trained/kjv/")) want.add(p);
  return [...want];
}

function mkdirs(FS, path) {
  let at = "";
  for (const part of path.split("/").slice(0, -1)) {
    if (!part) continue;
    at += "/" + part;
    try { FS.mkdir(at); } catch (e) { /* exists */ }
  }
}

function listFiles(FS, dir, out) {
  for (const name of FS.readdir(dir)) {
    if (name === "." || name === "..") continue;
    const p = dir + "/" + name, st = FS.stat(p);
    if (FS.isDir(st.mode)) listFiles(FS, p, out);
    else out.set(p, st.mtime.getTime() + ":" + st.size);
  }
  return out;
}

onmessage = async (ev) => {
  const { args, stdin, local } = ev.data;
  const out = stream("out"), err = stream("err");
  try {
    const manifest = await (await fetch("files.json")).json();
    const fetched = await Promise.all(needed(manifest, args).map(async (p) => {
      const r = await fetch(p);
      if (!r.ok) throw new Error(p + ": HTTP " + r.status);
      return [p, new Uint8Array(await r.arrayBuffer())];
    }));
    const picked = await Promise.all((local || []).map(async (f) => [f.path, new Uint8Array(await f.file.arrayBuffer())]));
    const input = new TextEncoder().encode(stdin || "");
    let at = 0;
    const M = await createLantern({
      noInitialRun: true,
      print: () => {}, printErr: () => {},
      preRun: [(mod) => mod.FS.init(() => (at < input.length ? input[at++] : null), out.put, err.put)],
    });
    const FS = M.FS;
    for (const [p, data] of fetched.concat(picked)) {
      const abs = p.startsWith("/") ? p : ROOT + "/" + p;
      mkdirs(FS, abs);
      FS.writeFile(abs, data);
    }
    try { FS.mkdir(ROOT); } catch (e) { /* exists */ }
    FS.chdir(ROOT);
    const before = listFiles(FS, ROOT, new Map());
    const status = M.callMain(args);
    out.flush();
    err.flush();
    // What the command wrote (a --report page, a --trace-json file): back to the page.
    for (const [p, stamp] of listFiles(FS, ROOT, new Map()))
      if (before.get(p) !== stamp) postMessage({ file: p.slice(ROOT.length + 1), data: FS.readFile(p) });
    postMessage({ done: status });
  } catch (e) {
    out.flush();
    err.flush();
    postMessage({ fail: String(e && e.message ? e.message : e) });
  }
};
