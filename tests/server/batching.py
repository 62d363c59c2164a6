# tests/server/batching.py — continuous batching seen from the clients.
#
#   python3 tests/server/batching.py same BASE_URL     answers alone == answers among 8
#   python3 tests/server/batching.py load BASE_URL     64 clients, hang-ups, blocks back to 0
#   python3 tests/server/batching.py inflight BASE_URL starts 4 streams and prints when they run
#   python3 tests/server/batching.py prefix BASE_URL MODEL  prompts with a common beginning share
#                                                       its KV blocks; answers equal ./run --raw
#   python3 tests/server/batching.py trace BASE_URL OUT.json  4 overlapping streams (one joins late);
#                                                       what each received goes to OUT.json
#   python3 tests/server/batching.py trace-check - TRACE.json OUT.json  the server's --trace-json
#                                                       agrees with what the streams received
#
# Plain http.client, one thread per client. Exit 1 on the first failure.
import http.client, json, subprocess, sys, threading, time, urllib.parse, math

def fail(what):
    print("FAIL " + what)
    sys.exit(1)

def ok(what):
    print("ok   " + what)

URL = urllib.parse.urlparse(sys.argv[2])

def conn(timeout=120):
    return http.client.HTTPConnection(URL.hostname, URL.port, timeout=timeout)

def ask(body, path="/v1/chat/completions", on_event=None):
    """Returns (status, text, answer or error JSON); streams are put together
    (their answer: {"id", "logprobs"}), on_event(text so far) after each event."""
    c = conn()
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200 or not body.get("stream"):
        a = json.loads(r.read())
        text = None
        if r.status == 200:
            ch = a["choices"][0]
            text = ch["message"]["content"] if "message" in ch else ch["text"]
        return r.status, text, a
    text, lps, rid = "", [], None
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if "error" in ev:
            return 500, None, ev
        rid = ev.get("id", rid)
        for ch in ev["choices"]:
            text += ch.get("delta", {}).get("content", "") or ch.get("text", "") or ""
            if ch.get("logprobs"):
                lps += ch["logprobs"]["content"]
        if on_event:
            on_event(text)
    return 200, text, {"id": rid, "logprobs": lps}

def metrics():
    c = conn(10)
    c.request("GET", "/metrics")
    m = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.split()
            m[k] = float(v)
    return m

def requests8():
    prompts = ["Hi", "Tell me about the sea", "Count to twenty please", "Why is the sky blue?",
               "A", "Write a poem about a lantern in the night", "2+2=", "Name three colors"]
    out = []
    for i, p in enumerate(prompts):
        b = {"messages": [{"role": "user", "content": p}], "max_tokens": [5, 40, 12, 30, 3, 24, 8, 16][i],
             "stream": i % 2 == 1}
        if i % 3 == 0:
            b["temperature"] = 0
        else:
            b.update(temperature=0.9, top_k=40, seed=1000 + i)
        out.append(b)
    return out

def same():
    reqs = requests8()
    alone = [ask(b) for b in reqs]
    for i, (st, text, _) in enumerate(alone):
        if st != 200 or text is None:
            fail("request %d alone: HTTP %d" % (i, st))
    ok("8 requests of 3 to 40 tokens, each alone")
    # Together, joining one after another while the others decode; twice.
    for rnd in range(2):
        res = [None] * len(reqs)
        def run(i):
            time.sleep(0.03 * i * (rnd + 1))
            res[i] = ask(reqs[i])
        ts = [threading.Thread(target=run, args=(i,)) for i in range(len(reqs))]
        for t in ts: t.start()
        for t in ts: t.join()
        for i in range(len(reqs)):
            if res[i][0] != 200 or res[i][1] != alone[i][1]:
                fail("round %d request %d: %r among 8, %r alone" % (rnd, i, res[i][1], alone[i][1]))
    ok("8 at once (staggered joins, different lengths, streamed and not): every text byte-identical to its text alone")
    m = metrics()
    if m["lantern_steps_total"] >= m["lantern_tokens_generated_total"]:
        fail("no step ran more than one sequence: %s" % m)
    ok("steps batched several sequences (%d steps for %d tokens)" % (m["lantern_steps_total"], m["lantern_tokens_generated_total"]))
    # logprobs: the chosen tokens spell the answer; each is among its alternatives.
    b = dict(reqs[1], stream=False, logprobs=True, top_logprobs=3)
    st, text, a = ask(b)
    lp = a["choices"][0]["logprobs"]["content"] if st == 200 else None
    if not lp or "".join(bytes(t["bytes"]).decode("utf-8", "replace") for t in lp) != text or text != alone[1][1]:
        fail("logprobs: tokens do not spell the answer: %s" % json.dumps(a)[:300])
    for t in lp:
        if not (t["logprob"] <= 0 and len(t["top_logprobs"]) == 3 and
                t["top_logprobs"][0]["logprob"] >= t["logprob"] - 1e-6 and
                all(x["logprob"] <= 0 for x in t["top_logprobs"])):
            fail("logprobs entry: %s" % t)
    st2, text2, a2 = ask(dict(b, stream=True))
    if text2 != text or [t["token"] for t in a2["logprobs"]] != [t["token"] for t in lp]:
        fail("streamed logprobs differ from the answer's")
    st3, _, a3 = ask({"prompt": "Once", "max_tokens": 4, "temperature": 0, "logprobs": 2}, "/v1/completions")
    if st3 != 200 or len(a3["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) != 2:
        fail("completions logprobs: %s" % a3)
    st4, _, a4 = ask({"messages": [{"role": "user", "content": "x"}], "logprobs": True, "top_logprobs": 9})
    if st4 != 400 or a4["error"]["param"] != "top_logprobs":
        fail("top_logprobs 9: HTTP %d %s" % (st4, a4))
    ok("logprobs: tokens spell the text, top_logprobs sorted, streamed = not streamed, completions too, 9 refused")

def load():
    # 64 clients against 8 slots and a queue of 16: each gets an answer or a
    # 503; a few hang up mid-prefill or mid-decode.
    results, lock = [], threading.Lock()
    long_prompt = "Tell me everything. " * 60
    def client(i):
        kind = "normal"
        try:
            if i % 16 == 5:  # hangs up right after sending a long prompt: mid-prefill
                kind = "prefill"
                c = conn()
                c.request("POST", "/v1/chat/completions", json.dumps(
                    {"messages": [{"role": "user", "content": long_prompt}], "max_tokens": 50, "stream": True}),
                    {"Content-Type": "application/json"})
                time.sleep(0.05)
                c.sock.close()
                r = "hangup"
            elif i % 16 == 9:  # reads the first piece, then hangs up: mid-decode
                kind = "decode"
                c = conn()
                c.request("POST", "/v1/chat/completions", json.dumps(
                    {"messages": [{"role": "user", "content": "Go on"}], "max_tokens": 400, "stream": True}),
                    {"Content-Type": "application/json"})
                rr = c.getresponse()
                if rr.status == 200:
                    rr.fp.readline()
                c.sock.close()
                r = "hangup"
            else:
                st, text, a = ask({"messages": [{"role": "user", "content": "Client %d" % i}],
                                   "max_tokens": 4 + i % 13, "temperature": 0, "stream": i % 2 == 0})
                r = st if st != 503 or a["error"]["code"] == "queue_full" else "bad 503"
        except Exception as e:
            r = "exception %s" % e
        with lock:
            results.append((kind, r))
    ts = [threading.Thread(target=client, args=(i,)) for i in range(64)]
    for t in ts: t.start()
    for t in ts: t.join()
    normal = [r for k, r in results if k == "normal"]
    bad = [r for r in normal if r not in (200, 503)]
    if bad:
        fail("64 clients: unexpected outcomes %s" % bad[:5])
    if normal.count(200) < 16:
        fail("64 clients: only %d answers" % normal.count(200))
    ok("64 clients vs 8 slots: %d answered, %d got 503 queue_full, %d hung up" %
       (normal.count(200), normal.count(503), len(results) - len(normal)))
    for _ in range(300):
        m = metrics()
        if m["lantern_slots_busy"] == 0 and m["lantern_queue_length"] == 0:
            break
        time.sleep(0.1)
    if m["lantern_kv_blocks_used"] != 0 or m["lantern_slots_busy"] != 0:
        fail("after the load: %s" % m)
    ok("after the load: 0 slots busy, 0 waiting, KV blocks used back to 0 of %d" % m["lantern_kv_blocks_free"])

def inflight():
    # Four long streams; prints "running" once all four have text, then
    # keeps reading until the server ends them.
    got = []
    def run(i):
        st, text, a = ask({"messages": [{"role": "user", "content": "Story %d" % i}], "max_tokens": 100000, "stream": True})
        got.append((st, a.get("error", {}).get("message", "") if isinstance(a.get("error"), dict) else ""))
    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts: t.start()
    for _ in range(200):
        if metrics()["lantern_slots_decoding"] == 4:
            break
        time.sleep(0.05)
    print("running", flush=True)
    for t in ts: t.join()
    if len(got) != 4 or any(g[1] != "the server is shutting down" for g in got):
        fail("in-flight streams at shutdown: %s" % got)
    ok("shutdown: the 4 streams in flight each got 'the server is shutting down'")

def prefix():
    # One long beginning, four endings: the first request writes the
    # beginning's blocks, the next three (at once) share them. Each answer,
    # greedy or seeded, must equal ./run's on the same prompt: one sequence in
    # its own cache, nothing shared. Then a chat's second turn shares its first.
    model = sys.argv[3]
    shared = ("In the beginning God created the heaven and the earth. And the earth was without form, and void; "
              "and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.\n")
    endings = ["And God said", "Let there be", "And the evening", "Who was Moses?"]
    reqs = [{"prompt": shared + e, "max_tokens": 12, "temperature": 0} if i % 2 == 0 else
            {"prompt": shared + e, "max_tokens": 12, "temperature": 0.9, "top_k": 40, "seed": 7 + i}
            for i, e in enumerate(endings)]
    want = []
    for b in reqs:
        flags = ["-t", "0"] if b["temperature"] == 0 else ["-t", "0.9", "-k", "40", "-s", str(b["seed"])]
        out = subprocess.run(["./run", model, b["prompt"], "--raw", "--no-gen-config", "-n", "12", "--threads", "1",
                              "--json"] + flags, capture_output=True, text=True)
        if out.returncode != 0:
            fail("./run: %s" % out.stderr[-300:])
        want.append(json.loads(out.stdout)["text"])
    m0 = metrics()
    st, _, a = ask({"prompt": shared, "max_tokens": 1, "temperature": 0}, "/v1/completions")
    n_shared = a["usage"]["prompt_tokens"] if st == 200 else fail("HTTP %d" % st)
    st, text0, _ = ask(reqs[0], "/v1/completions")
    res = [None] * 3
    def run(i):
        res[i] = ask(dict(reqs[i + 1], stream=i == 1), "/v1/completions")
    ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in ts: t.start()
    for t in ts: t.join()
    texts = [text0] + [r[1] for r in res]
    for i in range(4):
        if texts[i] != want[i]:
            fail("prefix request %d: %r from the server, %r from ./run" % (i, texts[i], want[i]))
    m1 = metrics()
    block = int(m1["lantern_kv_block_tokens"])
    reused = m1["lantern_prompt_tokens_reused_total"] - m0["lantern_prompt_tokens_reused_total"]
    # Every request after the first shares the beginning's whole blocks
    # (the last token of the beginning may merge with the ending: one block less).
    least = 4 * ((n_shared - 1) // block - 1) * block
    if reused < least or least <= 0:
        fail("prefix: %d prompt tokens reused, expected at least %d (%d-token beginning)" % (reused, least, n_shared))
    ok("4 prompts after a %d-token beginning: %d prompt tokens shared, not prefilled; greedy and seeded answers equal ./run --raw"
       % (n_shared, reused))
    # A chat's second turn begins with its first turn (and the answer to it).
    turn1 = [{"role": "user", "content": "Tell me about the waters and the firmament."}]
    st, ans, _ = ask({"messages": turn1, "max_tokens": 20, "temperature": 0})
    before = metrics()["lantern_prompt_tokens_reused_total"]
    st, _, a = ask({"messages": turn1 + [{"role": "assistant", "content": ans}, {"role": "user", "content": "And then?"}],
                    "max_tokens": 8, "temperature": 0})
    reused2 = metrics()["lantern_prompt_tokens_reused_total"] - before
    if st != 200 or reused2 < block * 2:
        fail("second chat turn: HTTP %d, %d prompt tokens reused" % (st, reused2))
    ok("a chat's second turn shares %d of its %d prompt tokens with the first" % (reused2, a["usage"]["prompt_tokens"]))
    m = metrics()
    if m["lantern_kv_blocks_used"] != 0 or m["lantern_kv_blocks_cached"] <= 0:
        fail("after the prefix requests: %d blocks used, %d cached" % (m["lantern_kv_blocks_used"], m["lantern_kv_blocks_cached"]))
    ok("afterwards: 0 KV blocks used, %d free blocks still cached for the next prompt" % m["lantern_kv_blocks_cached"])

def trace_clients():
    """Overlapping streams of different lengths for a server started with
    --report / --trace-json: three at once, and a fourth once the longest is
    decoding. Writes what each received (its id and tokens) to sys.argv[3]."""
    reqs = [("Write a poem about a lantern in the night", 80), ("Hi", 12), ("Tell me about the sea", 40),
            ("Count to twenty please", 24)]
    res = [None] * len(reqs)
    decoding = threading.Event()
    def run(i):
        p, n = reqs[i]
        b = {"messages": [{"role": "user", "content": p}], "max_tokens": n, "stream": True, "logprobs": True,
             "temperature": 0.8, "seed": 7 + i}
        res[i] = ask(b, on_event=(lambda text: len(text) > 10 and decoding.set()) if i == 0 else None)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in ts: t.start()
    if not decoding.wait(60):
        fail("the first stream did not start")
    late = threading.Thread(target=run, args=(3,))
    late.start()
    for t in ts + [late]: t.join()
    got = []
    for i, (st, text, a) in enumerate(res):
        if st != 200 or not a.get("id"):
            fail("request %d: HTTP %d %s" % (i, st, json.dumps(a)[:200]))
        got.append({"request": int(a["id"].split("-")[-1]), "max_tokens": reqs[i][1], "late": i == 3, "text": text,
                    "tokens": [t["token"] for t in a["logprobs"]]})
    json.dump(got, open(sys.argv[3], "w"))
    ok("4 overlapping streams of %s tokens, the last one joining while the first decodes"
       % ", ".join(str(len(g["tokens"])) for g in got))

def trace_check():
    """What the server's --trace-json says about the streams trace_clients
    received: python3 batching.py trace-check - TRACE.json RECEIVED.json"""
    trace = json.load(open(sys.argv[3]))["traceEvents"]
    got = json.load(open(sys.argv[4]))
    slots = [e for e in trace if e.get("ph") == "X" and e.get("cat") in ("prefill", "decode")]
    steps = [e for e in trace if e.get("ph") == "X" and e.get("cat") == "step"]
    if not slots or not steps:
        fail("the trace has no steps or no per-slot slices (%d events)" % len(trace))
    names = {e["tid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "thread_name"}
    per_step = {}
    for e in slots:
        a = e["args"]
        if e["name"] != "#%d %s" % (a["request"], a["phase"]) or names.get(e["tid"]) != "slot %d" % a["slot"]:
            fail("slice %r (args %s) is not on its slot's track %r" % (e["name"], a, names.get(e["tid"])))
        per_step.setdefault(a["step"], []).append(a)
    most = max(len(v) for v in per_step.values())
    if most < 2:
        fail("no step holds two sequences")
    for s in steps:
        if s["args"]["sequences"] != len(per_step.get(s["args"]["step"], [])):
            fail("step %s says %d sequences, its slots hold %d" % (s["args"]["step"], s["args"]["sequences"],
                                                                  len(per_step.get(s["args"]["step"], []))))
        # the step's time split: weight products and attention inside the
        # forward, sampling after it; the parts add up to the step's length
        a = s["args"]
        parts = [a["weights_ms"], a["attention_ms"], a["other_forward_ms"], a["sampling_ms"]]
        if min(parts) < 0 or a["weights_ms"] <= 0 or a["since_last_step_ms"] < 0:
            fail("step %s: a time split that cannot be (%s)" % (a["step"], a))
        if abs(sum(parts) - s["dur"] / 1000) > 0.05 + 0.01 * s["dur"] / 1000:
            fail("step %s: weights + attention + rest + sampling = %.3f ms, the step took %.3f ms" %
                 (a["step"], sum(parts), s["dur"] / 1000))
    ok("%d steps, %d per-slot slices; up to %d sequences in one step; each step's time split adds up" %
       (len(steps), len(slots), most))
    first = {}
    for g in got:
        rows = sorted((a for v in per_step.values() for a in v if a["request"] == g["request"]), key=lambda a: a["step"])
        if not rows:
            fail("request %d is not in the trace" % g["request"])
        first[g["request"]] = rows[0]["step"]
        sampled = [a for a in rows if "token" in a]
        if sampled and sampled[-1].get("finish") == "stop":
            sampled = sampled[:-1]  # the stop token ends the answer; it is not sent
        texts = [a["text"] for a in sampled]
        if texts != g["tokens"]:
            fail("request %d: the trace sampled %r, the client received %r" % (g["request"], texts[:8], g["tokens"][:8]))
        if "".join(texts) != g["text"] or not texts:
            fail("request %d: the trace's tokens spell %r, the client got %r" % (g["request"], "".join(texts), g["text"]))
        phases = [a["phase"] for a in rows]
        if phases != sorted(phases, key=lambda p: p == "decode") or phases[0] != "prefill":
            fail("request %d: phases out of order: %s" % (g["request"], phases))
        pos = [p for a in rows for p in range(a["pos"], a["pos"] + a["tokens"])]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            fail("request %d: positions do not follow each other: %s" % (g["request"], pos[:40]))
    ok("every request's sampled tokens in the trace are the tokens it received (%s)"
       % ", ".join("#%d: %d" % (g["request"], len(g["tokens"])) for g in got))
    late = [g for g in got if g["late"]]
    early = [g for g in got if not g["late"]]
    for l in late:
        if first[l["request"]] <= max(first[g["request"]] for g in early):
            fail("request %d joined later but starts in step %d" % (l["request"], first[l["request"]]))
    ok("the request that joined later starts in a later step (%d, after %s)"
       % (first[late[0]["request"]], ", ".join(str(first[g["request"]]) for g in early)))

{"same": same, "load": load, "inflight": inflight, "prefix": prefix, "trace": trace_clients,
 "trace-check": trace_check}[sys.argv[1]]()
