"""Hostile clients against ./run serve on 127.0.0.1 (tests/check_hostile_server.sh).

usage: hostile_client.py PORT SERVER_PID EXPECTED_TEXT
Every step is bounded in count and time. Prints one line per check; exits 1
if any failed. The server must survive all of it and then answer a normal
request with the right text.
"""
import json, os, socket, sys, threading, time

PORT, PID, EXPECTED = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
failures = 0
HI = '"messages": [{"role": "user", "content": "Hi"}]'


T0 = time.time()


def check(ok, what, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + f"[{time.time() - T0:5.1f} s] " + what + ("" if ok else "  [" + str(detail)[:300] + "]"), flush=True)
    failures += 0 if ok else 1


def rss_kb():
    for line in open(f"/proc/{PID}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def connect(timeout=10):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s):
    """(status, body) of one response on s; the server closes or sends Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if not head:
        return 0, b""
    status = int(head.split(b" ")[1])
    length = None
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while length is not None and len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, body


def request(raw, timeout=30):
    s = connect(timeout)
    try:
        s.sendall(raw)
        return read_response(s)
    except (ConnectionError, socket.timeout) as e:
        return -1, str(e).encode()
    finally:
        s.close()


def post(path, body, extra=b""):
    body = body if isinstance(body, bytes) else body.encode()
    return request(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def health(timeout=5):
    t0 = time.time()
    status, body = request(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", timeout)
    return status, time.time() - t0, body


def code_of(body):
    try:
        return json.loads(body)["error"]["code"]
    except Exception:
        return None


rss_before = rss_kb()
print(f"server RSS before: {rss_before / 1024:.1f} MiB", flush=True)

# 1. Nested JSON: the body that used to overflow the stack, and a deep body.
deep = "[" * 100000 + "]" * 100000
status, body = post("/v1/chat/completions", "{" + HI + ', "stop": ' + deep + "}")
check(status == 400 and code_of(body) == "invalid_json", "stop nested 100,000 deep: 400 invalid_json", (status, body))
status, body = post("/v1/completions", '{"prompt": ' + "{\"a\":" * 50000 + "1" + "}" * 50000 + "}")
check(status == 400 and code_of(body) == "invalid_json", "objects nested 50,000 deep: 400 invalid_json", (status, body))

# 2. Framing and sizes.
status, body = request(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
check(status == 400, "Content-Length: -5 gets 400", (status, body))
status, body = request(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello")
check(status == 400, "two Content-Length headers get 400", (status, body))
status, body = request(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n")
check(status == 400, "a 20-digit Content-Length gets 400", (status, body))
big = b'{"prompt": "' + b"a" * (2 << 20) + b'"}'
status, body = post("/v1/completions", big)
check(status == 413, "a 2 MiB body gets 413", (status, body))
status, body = request(b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(10000)) + b"\r\n")
check(status == 431, "10,000 headers get 431", (status, body))
status, body = request(b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(150)) + b"\r\n")
check(status == 431, "150 small headers get 431", (status, body))
status, body = request(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n")
check(status == 431, "a 20 KB header line gets 431", (status, body))
status, body = post("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\xff\xfe bad \xc3"}]}')
check(status == 400, "invalid UTF-8 in the body gets 400", (status, body))

# 3. Slowloris: 30 connections sending one header line every 2 s. /health
# must answer while they hang on, and the server must drop each of them
# once its head deadline passes.
slow = []
for i in range(30):
    s = connect(30)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    slow.append(s)
stop_dripping = threading.Event()
closed_at = {}
t_start = time.time()


def drip():
    n = 0
    while not stop_dripping.is_set() and len(closed_at) < len(slow):
        for i, s in enumerate(slow):
            if i in closed_at:
                continue
            try:
                s.sendall(b"X-Drip-%d: y\r\n" % n)
            except OSError:
                closed_at[i] = time.time() - t_start
        n += 1
        stop_dripping.wait(2)


dripper = threading.Thread(target=drip)
dripper.start()
worst = 0
for _ in range(5):
    time.sleep(1)
    status, took, _ = health()
    worst = max(worst, took if status == 200 else 99)
check(worst < 2, f"/health answers while 30 slowloris connections drip (slowest {worst:.2f} s)", worst)
for i, s in enumerate(slow):  # the server ends them: a 408 or a close
    s.settimeout(20)
    try:
        status, _ = read_response(s)
    except OSError:
        status = 0
    closed_at.setdefault(i, time.time() - t_start)
stop_dripping.set()
dripper.join()
latest = max(closed_at.values())
check(latest < 16, f"every slowloris connection was dropped by the server ({latest:.1f} s after it began)", latest)
for s in slow:
    s.close()

# 4. Hundreds of connections that connect and close, or send half a request.
def connect_close(k):
    for i in range(30):
        s = connect()
        if i % 2:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"pro")
        s.close()


storm = [threading.Thread(target=connect_close, args=(k,)) for k in range(10)]
for t in storm:
    t.start()
for t in storm:
    t.join()
status, took, _ = health()
check(status == 200, f"after 300 connect/close: /health answers ({took:.2f} s)", status)

# 5. More connections than the limit: the extra ones get 503 at once, and
# once they are gone /health answers again (the documented limit).
held = []
t0 = time.time()


def hold(k):
    for i in range(14):  # each sends half a head, so the server holds it for its head deadline
        s = connect()
        s.sendall(b"GET /health HTTP/1.1\r\n")
        held.append(s)


holders = [threading.Thread(target=hold, args=(k,)) for k in range(10)]
for t in holders:
    t.start()
for t in holders:
    t.join()
print(f"     ({len(held)} connections opened in {time.time() - t0:.1f} s)", flush=True)
time.sleep(0.5)
status, took, body = health()
check(status == 503 and code_of(body) == "too_many_connections",
      f"with 140 idle connections held, one more gets 503 too_many_connections ({took:.2f} s)", (status, body))
for s in held:
    s.close()
time.sleep(1)
status, took, _ = health()
check(status == 200, f"after they close: /health answers ({took:.2f} s)", status)

# 6. Abandoned requests: the clients send a long generation and leave. Both
# kinds must be cancelled, so the queue empties and real users get through.
for i in range(6):
    s = connect()
    body = ('{' + HI + ', "max_tokens": 3000, "seed": %d%s}' % (i, ', "stream": true' if i % 2 else "")).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    if i % 2:
        s.recv(10)  # the stream has begun
    s.close()
deadline = time.time() + 20
waiting = None
while time.time() < deadline:
    status, _, body = health()
    waiting = json.loads(body).get("waiting") if status == 200 else None
    if waiting == 0:
        break
    time.sleep(0.5)
check(waiting == 0, "6 abandoned requests (3 streaming, 3 not) leave the queue", waiting)

# 7. A normal request gets the right answer.
status, body = post("/v1/chat/completions", '{' + HI + ', "max_tokens": 12, "temperature": 0}')
text = json.loads(body)["choices"][0]["message"]["content"] if status == 200 else None
check(status == 200 and text == EXPECTED, "then a normal request gets the same text as ./run", (status, text, EXPECTED))

rss_after = rss_kb()
grew = (rss_after - rss_before) / 1024
print(f"server RSS after: {rss_after / 1024:.1f} MiB (grew {grew:+.1f} MiB)", flush=True)
# ThreadSanitizer keeps shadow memory and a history per thread, several
# times the program's own; `make sanitize SANITIZE=thread` raises the bound
# through HOSTILE_RSS_MIB.
limit = float(os.environ.get("HOSTILE_RSS_MIB", "64"))
check(grew < limit, "RSS grew less than %g MiB" % limit, grew)
sys.exit(1 if failures else 0)
