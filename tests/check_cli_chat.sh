#!/usr/bin/env bash
# tests/check_cli_chat.sh — the chat REPL as a person meets it, on a
# pseudo-terminal (Python's pty module): Ctrl-C during a reply returns to the
# prompt with the conversation kept, unknown /commands are answered without
# ending the session, /help and /save work,
# and Ctrl-C twice at an empty prompt quits. Exit 0 when every check passes.
set -u
cd "$(dirname "$0")/.."
[ -x ./run ] && [ -f models/tiny/model.safetensors ] || { echo "needs ./run and models/tiny (make && make models)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HOME="$T"  # the history file of a terminal chat goes here, not to the user's home
/usr/bin/python3 - "$T" <<'EOF'
import os, pty, sys, time, select, signal
tmp = sys.argv[1]
failed = 0
def check(name, ok, detail=""):
    global failed
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok else "  " + detail[-600:]))
    failed += 0 if ok else 1

pid, fd = pty.fork()
if pid == 0:
    os.execv("./run", ["./run", "chat", "models/tiny", "-n", "-1", "--ctx", "4096", "-t", "1", "-k", "0"])
out = b""
pos = 0  # read_until looks for its marker past the previous one
def read_until(marker, timeout=120):
    global out, pos
    end = time.time() + timeout
    while time.time() < end:
        i = out.find(marker, pos)
        if i >= 0:
            pos = i + len(marker)
            return True
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            out += chunk
    return False
def send(b): os.write(fd, b)

check("the REPL starts and prompts", read_until(b"> "))
mark = len(out)
send(b"/help\n"); read_until(b"> ")
check("/help lists the commands", b"/save FILE" in out[mark:], out[mark:].decode(errors="replace"))
mark = len(out)
send(b"/bogus\n"); read_until(b"> ")
check("an unknown /command is answered, not sent to the model", b"unknown command /bogus" in out[mark:], out[mark:].decode(errors="replace"))
# (An invalid UTF-8 line is checked through a pipe, tests/check_cli_chat_input.sh:
# on a terminal the line editor decodes what is typed and drops such bytes.)
# A reply with no length limit: Ctrl-C must stop it and give the prompt back.
mark = len(out)
send(b"Tell me a long story\n")
time.sleep(3)
os.kill(pid, signal.SIGINT)
back = read_until(b"(stopped)", 60) and read_until(b"> ", 30)
check("Ctrl-C during a reply stops it and returns to the prompt", back, out[mark:].decode(errors="replace"))
mark = len(out)
send(b"/save " + tmp.encode() + b"/t.txt\n"); read_until(b"> ")
saved = open(tmp + "/t.txt", encoding="utf-8", errors="replace").read() if os.path.exists(tmp + "/t.txt") else ""
check("/save writes the conversation, the interrupted turn included", "user: Tell me a long story" in saved and "assistant: " in saved,
      out[mark:].decode(errors="replace") + saved[:200])
mark = len(out)
os.kill(pid, signal.SIGINT); read_until(b"again", 10); read_until(b"> ", 5); time.sleep(0.3)
os.kill(pid, signal.SIGINT)
t0 = time.time(); status = None
while time.time() - t0 < 20:
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = st
        break
    try:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r: out += os.read(fd, 4096)
    except OSError:
        pass
check("Ctrl-C twice at an empty prompt quits with status 0", status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
      out[mark:].decode(errors="replace"))
if status is None:
    os.kill(pid, signal.SIGKILL)
print(f"{failed} failed")
sys.exit(1 if failed else 0)
EOF
