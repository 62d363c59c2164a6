#!/usr/bin/python3
"""A stand-in for the Hugging Face Hub, for tests/check_download.sh.

    /usr/bin/python3 tools/mock_hub.py PORT ROOT

Serves the files under ROOT/<org>/<repo>/ on 127.0.0.1:PORT (PORT 0 picks a
free one; the first line on stdout names it) with the Hub's URL layout and
headers, as tools/download_qwen.sh sees them:

  HEAD|GET /<org>/<repo>/resolve/main/<file>
      A small (git) file is served directly, its ETag the git blob sha1, as
      the Hub's is. An LFS file (.safetensors, .gguf) is answered with a 302
      to /cdn/<org>/<repo>/<file>, carrying X-Linked-Etag: "<sha256>",
      X-Linked-Size and ETag (the sha256) as the Hub's redirect does; the
      /cdn/ path serves the bytes. Both honour Range: bytes=N- and N-M
      (206 with Content-Range; 416 past the end). A missing file is a 404
      with X-Error-Code: EntryNotFound.
  GET /api/models/<org>/<repo>
      {"id": ..., "siblings": [{"rfilename": ...}, ...]}
  ROOT/.private  lines "<org>/<repo>[/<file>] <token>": that repo (or file)
      answers 401 unless the request has "Authorization: Bearer <token>".
  ROOT/.faults   test switches, one a line, read at each request:
      cut <org>/<repo>/<file> <bytes>  close the connection after that many
                                       bytes of the body, the first time only
      corrupt <org>/<repo>/<file>      serve bytes that differ from the
                                       advertised sha256 (every time)

Every request is logged to stderr as one line:
    METHOD PATH range=<Range header or -> auth=<yes|no> -> STATUS
Standard library only.
"""
import hashlib
import http.server
import json
import os
import sys
import threading
import urllib.parse

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")
ROOT = ""
_lock = threading.Lock()
_hashes = {}      # (path, mtime, size) -> (sha256, git sha1)
_cut_done = set() # paths already cut once


def file_hashes(path):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    with _lock:
        if key in _hashes:
            return _hashes[key]
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1(b"blob %d\0" % st.st_size)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha256.update(chunk)
            sha1.update(chunk)
    result = (sha256.hexdigest(), sha1.hexdigest())
    with _lock:
        _hashes[key] = result
    return result


def read_lines(name):
    try:
        with open(os.path.join(ROOT, name)) as f:
            return [line.split() for line in f if line.strip() and not line.startswith("#")]
    except FileNotFoundError:
        return []


class Hub(http.server.BaseHTTPRequestHandler):
    server_version = "mock-hub/1"

    def log_message(self, fmt, *args):  # the one line per request is ours
        pass

    def log_line(self, status):
        sys.stderr.write("%s %s range=%s auth=%s -> %d\n" % (
            self.command, self.path, self.headers.get("Range", "-"),
            "yes" if self.headers.get("Authorization") else "no", status))
        sys.stderr.flush()

    def reply(self, status, headers=(), body=b""):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.log_line(status)

    def error(self, status, code, message):
        body = json.dumps({"error": message}).encode()
        self.reply(status, [("X-Error-Code", code), ("Content-Type", "application/json")], body)

    def allowed(self, repo, rel):
        token = None
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth[len("Bearer "):].strip()
        for parts in read_lines(".private"):
            if len(parts) != 2:
                continue
            target, secret = parts
            if target == repo or target == repo + "/" + rel:
                if token != secret:
                    return False
        return True

    def do_HEAD(self):
        self.handle_any()

    def do_GET(self):
        self.handle_any()

    def handle_any(self):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") or p.startswith(".") for p in parts):
            return self.error(400, "BadRequest", "bad path")
        if len(parts) == 4 and parts[:2] == ["api", "models"]:
            return self.api(parts[2] + "/" + parts[3])
        if len(parts) >= 5 and parts[2:4] == ["resolve", "main"]:
            return self.resolve(parts[0] + "/" + parts[1], "/".join(parts[4:]), cdn=False)
        if len(parts) >= 4 and parts[0] == "cdn":
            return self.resolve(parts[1] + "/" + parts[2], "/".join(parts[3:]), cdn=True)
        return self.error(404, "NotFound", "no such route")

    def api(self, repo):
        d = os.path.join(ROOT, repo)
        if not os.path.isdir(d):
            return self.error(401, "RepoNotFound", "Repository not found")
        if not self.allowed(repo, ""):
            return self.error(401, "RepoNotFound", "Invalid credentials")
        names = []
        for base, dirs, files in os.walk(d):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for f in sorted(files):
                names.append(os.path.relpath(os.path.join(base, f), d))
        body = json.dumps({"id": repo, "modelId": repo,
                           "siblings": [{"rfilename": n} for n in names]}).encode()
        self.reply(200, [("Content-Type", "application/json")], body)

    def resolve(self, repo, rel, cdn):
        if not os.path.isdir(os.path.join(ROOT, repo)):
            return self.error(401, "RepoNotFound", "Repository not found")
        if not cdn and not self.allowed(repo, rel):
            return self.error(401, "RepoNotFound", "Invalid credentials")
        full = os.path.join(ROOT, repo, rel)
        if not os.path.isfile(full):
            return self.error(404, "EntryNotFound", "Entry not found")
        size = os.path.getsize(full)
        sha256, sha1 = file_hashes(full)
        lfs = rel.endswith(LFS_SUFFIXES)
        if lfs and not cdn:
            return self.reply(302, [
                ("Location", "/cdn/%s/%s" % (repo, rel)),
                ("ETag", '"%s"' % sha256),
                ("X-Linked-Etag", '"%s"' % sha256),
                ("X-Linked-Size", str(size)),
                ("X-Repo-Commit", "0" * 40)])
        self.serve_bytes(repo + "/" + rel, full, size,
                         ('"cdn-%s"' % sha256[:16]) if cdn else '"%s"' % sha1)

    def serve_bytes(self, key, full, size, etag):
        cut = None
        corrupt = False
        for parts in read_lines(".faults"):
            if len(parts) == 3 and parts[0] == "cut" and parts[1] == key:
                cut = int(parts[2])
            elif len(parts) == 2 and parts[0] == "corrupt" and parts[1] == key:
                corrupt = True
        start, end, status = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng:
            spec = rng.strip()
            if not spec.startswith("bytes=") or "," in spec:
                return self.error(400, "BadRequest", "unsupported Range")
            a, _, b = spec[len("bytes="):].partition("-")
            try:
                start = int(a)
                end = min(int(b), size - 1) if b else size - 1
            except ValueError:
                return self.error(400, "BadRequest", "unsupported Range")
            if start >= size or start > end:
                return self.reply(416, [("Content-Range", "bytes */%d" % size)])
            status = 206
        length = end - start + 1
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        self.log_line(status)
        if self.command == "HEAD":
            return
        with _lock:
            do_cut = cut is not None and key not in _cut_done
            if do_cut:
                _cut_done.add(key)
        limit = min(length, cut) if do_cut else length
        sent = 0
        with open(full, "rb") as f:
            f.seek(start)
            while sent < limit:
                chunk = f.read(min(1 << 16, limit - sent))
                if not chunk:
                    break
                if corrupt and sent == 0:
                    chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                try:
                    self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    return
                sent += len(chunk)
        if do_cut:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass


def main():
    global ROOT
    if len(sys.argv) != 3:
        sys.exit("usage: mock_hub.py PORT ROOT")
    ROOT = os.path.abspath(sys.argv[2])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hub)
    server.daemon_threads = True
    print("mock_hub: serving %s on http://127.0.0.1:%d" % (ROOT, server.server_address[1]), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
