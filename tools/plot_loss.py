#!/usr/bin/python3
"""Draws the loss curve of a training log (CSV from tools/train.py) as a small SVG file.

    /usr/bin/python3 tools/plot_loss.py LOG.csv OUT.svg

Written by hand (no matplotlib): an SVG is a text file of lines and labels, and this one
only needs two polylines -- training loss and validation loss, both in bits per character --
against minutes of training.
"""
import csv
import sys


def read_log(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    return rows


def plot(rows, out, title="Lantern default model (KJV)"):
    train = [(float(r["minutes"]), float(r["train_bpc"])) for r in rows if r["train_bpc"]]
    val = [(float(r["minutes"]), float(r["val_bpc"])) for r in rows if r["val_bpc"]]
    pts = train + val
    W, H, L, R, T, B = 640, 400, 60, 20, 40, 50          # size and margins
    x1 = max(p[0] for p in pts) or 1.0
    y0 = 0.0
    y1 = max(min(max(p[1] for p in pts), 8.0), 1.0)         # clip the first few steps at 8
    y1 = float(int(y1) + 1)

    def sx(x):
        return L + (W - L - R) * x / x1

    def sy(y):
        return T + (H - T - B) * (1 - (min(y, y1) - y0) / (y1 - y0))

    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="15">%s</text>' % (L, title)]
    # grid and axis labels
    ystep = 0.5 if y1 <= 4 else 1.0
    y = y0
    while y <= y1 + 1e-9:
        s.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, sy(y), W - R, sy(y)))
        s.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (L - 6, sy(y) + 4, y))
        y += ystep
    xstep = 5 if x1 <= 60 else 10
    if x1 <= 10:
        xstep = 1
    x = 0
    while x <= x1 + 1e-9:
        s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (sx(x), T, sx(x), H - B))
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (sx(x), H - B + 16, x))
        x += xstep
    # Logs from tools/train.py count minutes of CPU time (they also have a wall_minutes
    # column); older logs counted the wall clock.
    clock = "CPU time of 1 thread" if "wall_minutes" in rows[0] else "wall clock, 1 thread"
    s.append('<text x="%d" y="%d" text-anchor="middle">minutes of training (%s)</text>'
             % ((L + W - R) // 2, H - 12, clock))
    s.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">'
             'bits per character</text>' % ((T + H - B) // 2, (T + H - B) // 2))
    for data, color, name, dy in ((train, "#1f77b4", "training", 0), (val, "#d62728", "validation", 16)):
        if not data:
            continue
        path = " ".join("%.1f,%.1f" % (sx(a), sy(b)) for a, b in data)
        s.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (color, path))
        s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                 % (W - R - 150, T + 10 + dy, W - R - 125, T + 10 + dy, color))
        s.append('<text x="%d" y="%d">%s (last %.3f)</text>' % (W - R - 120, T + 14 + dy, name, data[-1][1]))
    s.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(s) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_loss.py LOG.csv OUT.svg")
    plot(read_log(sys.argv[1]), sys.argv[2])
