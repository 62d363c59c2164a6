#!/usr/bin/env bash
# tests/check_cli_chat_input.sh — what the chat reads: a trailing backslash
# continues a message, /save then /load gives the same conversation back,
# /set changes a sampling setting and says so, an invalid UTF-8 line is
# refused with its offset (all through a pipe, so the lines are exactly
# these); then, on a terminal made by tmux, the Up arrow recalls the previous
# line and the history is kept in $HOME/.lantern_history for the next run.
# RUN=path/to/run runs them against another build.
set -u
cd "$(dirname "$0")/.."
RUN=${RUN:-./run}
[ -x "$RUN" ] && [ -f models/tiny/model.safetensors ] || { echo "needs ./run and models/tiny (make && make models)"; exit 1; }
T=$(mktemp -d)
trap '[ -n "${TMUX_SOCK:-}" ] && tmux -S "$TMUX_SOCK" kill-server 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
export HOME="$T"
. tests/lib.sh
M=models/tiny
C="chat $M -n 3 -t 0"

printf 'Hello\\\nthere, friend\n/save %s\n' "$T/a.txt" | $RUN $C >/dev/null 2>"$T/e"
python3 - "$T/a.txt" <<'PY'
import sys
t = open(sys.argv[1], encoding="utf-8").read()
assert t.startswith("user: Hello\nthere, friend\n\nassistant: "), repr(t[:80])
PY
check "a trailing backslash continues the message on the next line" $?

printf 'Hi\nWho are you?\n/save %s\n' "$T/b.txt" | $RUN $C >/dev/null 2>/dev/null
printf '/load %s\n/save %s\n' "$T/b.txt" "$T/b2.txt" | $RUN $C >/dev/null 2>"$T/e"
[ -s "$T/b.txt" ] && cmp -s "$T/b.txt" "$T/b2.txt" && grep -q "(4 messages loaded from $T/b.txt" "$T/e"
check "/load reads back what /save wrote (save, load, save: the same file)" $?
printf '/load %s\nAnd then?\n/save %s\n' "$T/b.txt" "$T/b3.txt" | $RUN $C >/dev/null 2>/dev/null
[ "$(head -c "$(wc -c <"$T/b.txt")" "$T/b3.txt")" = "$(cat "$T/b.txt")" ] && grep -q "^user: And then?" "$T/b3.txt" &&
    [ "$(grep -c '^assistant: ' "$T/b3.txt")" = 3 ]
check "after /load the conversation goes on from the loaded messages" $?
printf 'not a transcript\n' >"$T/bad.txt"
printf '/load %s\n/load %s\n' "$T/bad.txt" "$T/none.txt" | $RUN $C >/dev/null 2>"$T/e"
grep -q "bad.txt: line 1 does not start a message" "$T/e" && grep -q "none.txt: cannot read" "$T/e"
check "/load of a file that is not a transcript, or missing, says so and goes on" $?

printf '/set temp 0.5\n/set top-k 7\n/set top-p 0.9\n/set seed 42\n/set temp 9e9\n/set bogus 1\n' | $RUN $C >/dev/null 2>"$T/e"
grep -q "sampling: temperature 0.5 (/set)" "$T/e" && grep -q "top-k 7 (/set)" "$T/e" &&
    grep -q "top-p 0.9 (/set)" "$T/e" && grep -q "seed 42 (/set)" "$T/e" &&
    grep -q 'error: --temp: "9e9" must be a number in \[0, 1e+06\]' "$T/e" &&
    grep -q '/set: "bogus" is not a sampling setting (temp, top-k, top-p, seed' "$T/e"
check "/set temp, top-k, top-p and seed change the setting and report it; bad ones are refused" $?
a=$(printf 'Hello\n' | $RUN chat $M -n 6 -t 1 -s 42 2>/dev/null)
b=$(printf '/set temp 1\n/set seed 42\nHello\n' | $RUN chat $M -n 6 -t 0 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ]; check "/set temp and seed sample as the flags do" $?

printf 'caf\xe9 ok\nHi\n' | $RUN $C >"$T/o" 2>"$T/e"
grep -q "not valid UTF-8 (byte 0xe9 at offset 3 of the line)" "$T/e" && [ -s "$T/o" ]
check "an invalid UTF-8 line is refused with its own offset; the next line is answered" $?
# The same byte on the command line: counted the same way (from 0).
$RUN $M "$(printf 'caf\xe9 ok')" -n 1 </dev/null >/dev/null 2>"$T/e2"
grep -q "byte 0xe9 at offset 3 of the prompt" "$T/e2"
check "the chat and the command line count the offset of a bad byte the same way" $?

# /set alone: every setting /set can change, with its value and source, the
# penalties at their defaults too.
printf '/set\n' | $RUN $C >/dev/null 2>"$T/e"
ok=0
for name in temp top-k top-p seed repeat-penalty frequency-penalty presence-penalty repeat-last-n; do
    key=$name; [ $name = temp ] && key=temperature
    grep -q "^(sampling: .*$key [-0-9.e+]* (" "$T/e" || { ok=1; echo "      /set alone lacks $key"; }
done
# ...and /set names each of them as a setting it takes.
printf '/set bogus 1\n' | $RUN $C >/dev/null 2>"$T/e"
for name in temp top-k top-p seed repeat-penalty frequency-penalty presence-penalty repeat-last-n; do
    grep -q "not a sampling setting (.*\b$name\b" "$T/e" || { ok=1; echo "      /set does not take $name"; }
done
check "/set alone shows every setting /set can change, with its value and source" $ok
[ ! -e "$T/.lantern_history" ]; check "piped input writes no history file" $?

# The terminal: tmux runs the chat in a pseudo-terminal and types into it.
if command -v tmux >/dev/null; then
    TMUX_SOCK="$T/tmux.sock"
    tm() { tmux -S "$TMUX_SOCK" "$@"; }
    wait_for() {  # pattern: the pane shows it within 60 s (capture-pane drops trailing spaces: "> " is ">")
        for _ in $(seq 600); do tm capture-pane -p -t c 2>/dev/null | grep -q -- "$1" && return 0; sleep 0.1; done
        return 1
    }
    tm new-session -d -s c -x 150 -y 40 "HOME=$T $RUN $C 2>&1; sleep 30"
    wait_for "^>" && tm send-keys -t c "/set top-k 3" Enter && wait_for "top-k 3 (/set" &&
        tm send-keys -t c "/set top-k 5" Enter && wait_for "top-k 5 (/set" &&
        tm send-keys -t c Up Up Enter && wait_for "top-k 3 (/set.*" &&
        [ "$(tm capture-pane -p -t c | grep -c 'top-k 3 (/set')" = 2 ]
    check "on a terminal, Up recalls the earlier line (tmux)" $?
    tm send-keys -t c "/quit" Enter; sleep 1
    grep -q "top-k.0405" "$T/.lantern_history" 2>/dev/null; check "the terminal's lines are kept in ~/.lantern_history" $?
    tm kill-session -t c 2>/dev/null
    tm new-session -d -s d -x 150 -y 40 "HOME=$T $RUN $C 2>&1; sleep 30"
    wait_for_d() { for _ in $(seq 600); do tm capture-pane -p -t d 2>/dev/null | grep -q -- "$1" && return 0; sleep 0.1; done; return 1; }
    # its history: top-k 3, top-k 5, top-k 3 (recalled), /quit; Up twice is the recalled line
    wait_for_d "^>" && tm send-keys -t d Up Up Enter && wait_for_d "top-k 3 (/set"
    check "the next run recalls the previous run's lines" $?
    tm send-keys -t d "/quit" Enter
else
    echo "skip  Up arrow and history on a terminal (no tmux)"
fi

summary
