#!/usr/bin/env python3
"""Runs BENCHMARKS.md's "Reliable transfer (issue 10)" scenarios with
`braid bench --mode reliable --json` and prints their tables in Markdown.

    cargo build --release -p braid
    python3 scripts/reliable.py [--commands] [SECTION...]
    # sections: grid lte blackout lossy ptcp-rate ptcp-links ptcp-square ptcp-cc cmt
    BRAID=/path/to/braid python3 scripts/reliable.py ...   # target/release/braid by default

Seed 1 everywhere. `--commands` prints each run's bench command. Goodput is
the bytes the receiving application read, in order and verified, over the
transfer's completion time; "of capacity" divides it by the paths' summed
IP capacity, "of ideal" by that capacity less IP, UDP and stream headers
(30 + 28 bytes of each 1500-byte packet).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRAID = os.environ.get("BRAID", os.path.join(ROOT, "target", "release", "braid"))
TRACES = os.path.join(ROOT, "traces")
SHOW_COMMANDS = "--commands" in sys.argv


def bench(paths, size="100MB", duration="300s", cc="bbr"):
    cmd = [BRAID, "bench", "--mode", "reliable", "--traffic", f"bulk:{size}" if size else "bulk",
           "--duration", duration, "--cc", cc, "--json"]
    for p in paths:
        cmd += ["--path", p]
    if SHOW_COMMANDS:
        print("    $ braid " + " ".join(c for c in cmd[1:] if c != "--json"))
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    r["of_capacity"] = r["goodput_bps"] / r["capacity_bps"]
    return r


def mbit(bps):
    return f"{bps / 1e6:.2f}"


def pct(x):
    return f"{x * 100:.1f}%"


def done(r):
    if r["error"]:
        return "FAILED " + r["error"]
    return f"{r['completion_s']:.2f}" if r["completion_s"] is not None else "-"


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def header(*names):
    row(*names)
    row(*["---"] * len(names))


def size_for(mbit_total, seconds=30):
    """A transfer of about `seconds` at the paths' summed rate."""
    return f"{int(mbit_total * 1e6 / 8 * seconds / 1e6)}MB"


def grid():
    print("### Constant-rate paths: bandwidth ratio x RTT ratio (two paths, 30 s worth of data each)\n")
    header("paths", "capacity", "goodput", "of capacity", "of ideal", "best single", "completion s",
           "stall max ms", "retransmitted MB")
    for ratio in [1, 2, 5, 10]:
        for rtt_ratio in [1, 5, 10]:
            fast = f"{20}mbit,5ms"
            slow = f"{20 / ratio:g}mbit,{5 * rtt_ratio}ms"
            size = size_for(20 + 20 / ratio)
            r = bench([fast, slow], size)
            singles = [bench([p], size_for(20 + 20 / ratio)) for p in (fast, slow)]
            best = max(s["goodput_bps"] for s in singles)
            flag = "" if r["of_capacity"] >= 0.95 and r["goodput_bps"] >= best else " ✗"
            row(f"`{fast}` + `{slow}`", mbit(r["capacity_bps"]), mbit(r["goodput_bps"]) + flag,
                pct(r["of_capacity"]), pct(r["utilization"]), mbit(best), done(r), f"{r['stall_max_ms']:.0f}",
                f"{r['retransmitted_bytes'] / 1e6:.2f}")
    print()


def lte():
    print("### Constant-rate path + LTE trace (TMobile-LTE-short.down), unbounded bulk, 60 s\n")
    header("paths", "capacity", "goodput", "of capacity", "of ideal", "stall max ms", "retransmitted MB")
    for fixed in ["10mbit,10ms", "20mbit,10ms"]:
        paths = [fixed, f"trace={TRACES}/TMobile-LTE-short.down,20ms"]
        r = bench(paths, size=None, duration="60s")
        row(f"`{fixed}` + LTE,20ms", mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["of_capacity"]),
            pct(r["utilization"]), f"{r['stall_max_ms']:.0f}", f"{r['retransmitted_bytes'] / 1e6:.2f}")
    print()


def blackout():
    print("### A 10 s blackout on one of two paths (from 10 s to 20 s)\n")
    header("paths", "cc", "bytes read", "completion s", "goodput", "stall max ms", "retransmitted MB",
           "redundant MB")
    cases = [
        (["10mbit,10ms", "10mbit,30ms,blackout=10s+10s"], "bbr"),
        (["10mbit,10ms,blackout=10s+10s", "10mbit,30ms"], "bbr"),
        (["20mbit,5ms", "5mbit,50ms,blackout=10s+10s"], "bbr"),
        (["10mbit,10ms", "10mbit,30ms,blackout=10s+10s"], "ccid2"),
    ]
    for paths, cc in cases:
        r = bench(paths, "50MB", cc=cc)
        row(" + ".join(f"`{p}`" for p in paths), cc, r["read_bytes"], done(r), mbit(r["goodput_bps"]),
            f"{r['stall_max_ms']:.0f}", f"{r['retransmitted_bytes'] / 1e6:.2f}",
            f"{r['redundant_bytes'] / 1e6:.2f}")
    print()


def lossy():
    print("### 64 Mbit/s (10 ms) + 60 Mbit/s (25 ms, 1 % random loss)\n")
    header("cc", "capacity", "goodput", "of capacity", "of ideal", "completion s", "stall max ms",
           "retransmitted MB")
    for cc in ["bbr", "ccid2", "bbr,ccid2"]:
        r = bench(["64mbit,10ms", "60mbit,25ms,loss=1%"], "400MB", cc=cc)
        row(cc, mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["of_capacity"]), pct(r["utilization"]),
            done(r), f"{r['stall_max_ms']:.0f}", f"{r['retransmitted_bytes'] / 1e6:.2f}")
    print()


def ptcp_rate():
    print("### pTCP: rate differential (link 1 fixed at 1 Mbit/s, link 2 growing; 20 ms one-way each)\n")
    header("link 2", "ratio", "ideal sum", "goodput", "of capacity", "of ideal", "best single", "completion s")
    for mb in [1, 2, 4, 6, 8, 10]:
        paths = ["1mbit,20ms", f"{mb}mbit,20ms"]
        r = bench(paths, size_for(1 + mb, 40))
        best = max(bench([p], size_for(1 + mb, 40))["goodput_bps"] for p in paths)
        row(f"{mb} Mbit/s", f"{mb}:1", mbit(r["ideal_goodput_bps"]), mbit(r["goodput_bps"]), pct(r["of_capacity"]),
            pct(r["utilization"]), mbit(best), done(r))
    print()


def ptcp_links():
    print("### pTCP: 2 to 5 links (1, 10 Mbit/s, then 2, 5, 8 Mbit/s; one-way 20, 10, 30, 40, 50 ms)\n")
    all_paths = ["1mbit,20ms", "10mbit,10ms", "2mbit,30ms", "5mbit,40ms", "8mbit,50ms"]
    header("links", "capacity", "goodput", "of capacity", "of ideal", "completion s", "stall max ms")
    for n in range(2, 6):
        paths = all_paths[:n]
        total = sum(float(p.split("mbit")[0]) for p in paths)
        r = bench(paths, size_for(total, 40))
        row(n, mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["of_capacity"]), pct(r["utilization"]),
            done(r), f"{r['stall_max_ms']:.0f}")
    print()


def square_trace(high_mbit, low_mbit, half_s):
    """A mahimahi trace: `high` for `half_s` seconds, then `low`, repeating."""
    lines = []
    for half, rate in enumerate([high_mbit, low_mbit]):
        per_ms = rate * 1e6 / 8 / 1500 / 1000
        owed = 0.0
        for ms in range(half * half_s * 1000, (half + 1) * half_s * 1000):
            owed += per_ms
            while owed >= 1:
                lines.append(str(ms + 1))
                owed -= 1
    f = tempfile.NamedTemporaryFile("w", suffix=".trace", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


def ptcp_square():
    print("### pTCP: square-wave bandwidth (link 1: 5 Mbit/s, 20 ms; link 2: 8 <-> 2 Mbit/s every 5 s, 20 ms), 60 s\n")
    trace = square_trace(8, 2, 5)
    print(f"(link 2 is a generated mahimahi trace: `scripts/reliable.py`'s `square_trace(8, 2, 5)`)\n")
    header("paths", "capacity", "goodput", "of capacity", "of ideal", "stall max ms", "retransmitted MB")
    r = bench(["5mbit,20ms", f"trace={trace},20ms"], size=None, duration="60s")
    row("5 Mbit/s + square 8/2", mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["of_capacity"]),
        pct(r["utilization"]), f"{r['stall_max_ms']:.0f}", f"{r['retransmitted_bytes'] / 1e6:.2f}")
    os.unlink(trace)
    print()


def ptcp_cc():
    print("### pTCP: different congestion control per path (10 Mbit/s 10 ms + 10 Mbit/s 40 ms, 0.1 % loss on both)\n")
    header("cc (path 1, path 2)", "goodput", "of capacity", "of ideal", "completion s", "retransmitted MB")
    for cc in ["bbr", "ccid2", "bbr,ccid2", "ccid2,bbr"]:
        r = bench(["10mbit,10ms,loss=0.1%", "10mbit,40ms,loss=0.1%"], "75MB", cc=cc)
        row(cc, mbit(r["goodput_bps"]), pct(r["of_capacity"]), pct(r["utilization"]), done(r),
            f"{r['retransmitted_bytes'] / 1e6:.2f}")
    print()


def cmt():
    print("### cmt-thesis: number of paths (100 MiB file; 4G modems 10 Mbit/s at 25 and 40 ms one-way, jitter 2 ms; Ethernet 50 Mbit/s at 2 ms)\n")
    usb0, usb1, eth = "10mbit,25ms,jitter=2ms,name=usb0", "10mbit,40ms,jitter=2ms,name=usb1", "50mbit,2ms,name=eth0"
    header("case", "paths", "capacity", "goodput", "of capacity", "of ideal", "completion s")
    for case, paths in [(1, [usb0]), (2, [usb0, eth]), (3, [usb0, usb1, eth]), (4, [usb0, usb1])]:
        r = bench(paths, "100MiB")
        row(case, " + ".join(p.split("name=")[1] for p in paths), mbit(r["capacity_bps"]), mbit(r["goodput_bps"]),
            pct(r["of_capacity"]), pct(r["utilization"]), done(r))
    print()


SECTIONS = {"grid": grid, "lte": lte, "blackout": blackout, "lossy": lossy, "ptcp-rate": ptcp_rate,
            "ptcp-links": ptcp_links, "ptcp-square": ptcp_square, "ptcp-cc": ptcp_cc, "cmt": cmt}

if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__, end="")
        sys.exit(0)
    wanted = [a for a in sys.argv[1:] if not a.startswith("--")] or list(SECTIONS)
    for name in wanted:
        SECTIONS[name]()
