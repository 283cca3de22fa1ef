#!/usr/bin/env python3
"""The simulated counterpart of `tunnel-lab.py radio`: a fixed line beside
an LTE path that replays a capacity trace, one CUBIC flow through the
tunnel's session (`braid bench --session --resend-losses`), upload and
download, each started 1.5 s into the run (as the lab's flow starts on a
fresh tunnel) and measured for 30 s. Each set runs over the traces rotated
to six offsets (0, 23, ... 115 s), so that one figure rests on six
stretches of each trace rather than one. Prints TCP goodput over the IP
capacity the paths offered in the flow's window, per run and as means.

    cargo build --release -p braid
    scripts/radio-sim.py                      # BRAID=... for another binary
    scripts/radio-sim.py --scheduler min-rtt  # further bench flags

Deterministic: the same binary prints the same figures on every machine.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "traces")
BRAID = os.environ.get("BRAID", "target/release/braid")
OFFSETS = [0, 23, 46, 69, 92, 115]
SETS = [
    ("8 Mbit/s at 10 ms + T-Mobile LTE at 30 ms", "8mbit,10ms", "TMobile-LTE-short"),
    ("16 Mbit/s at 10 ms + Verizon LTE at 30 ms", "16mbit,10ms", "Verizon-LTE-short"),
]
START, SECONDS = 1.5, 30.0

_spec = importlib.util.spec_from_file_location("rotate_trace", os.path.join(HERE, "rotate-trace.py"))
rotate_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rotate_trace)


def capacity_mbps(ops, t0, t1):
    """Mean capacity of a trace (1500-byte opportunities, ms) over [t0, t1) s."""
    return sum(1 for o in ops if t0 * 1000 <= o < t1 * 1000) * 1500 * 8 / (t1 - t0) / 1e6


def run(job, tmp, extra):
    label, fixed, trace, direction, offset = job
    # The path's first file paces the client-to-server direction.
    forward, back = ("up", "down") if direction == "up" else ("down", "up")
    files = {}
    for d in (forward, back):
        files[d] = os.path.join(tmp, f"{trace}.{d}.{offset}")
    cmd = [BRAID, "bench", "--session", "--resend-losses", "--path", fixed,
           "--path", f"trace={files[forward]}/{files[back]},30ms",
           "--traffic", f"tcp:cubic@{START}s", "--duration", f"{START + SECONDS}s", "--json"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    tcp = json.loads(out.stdout)["flows"][0]["tcp"]
    ops = [int(line) for line in open(files[forward])]
    cap = float(fixed.split("mbit")[0]) + capacity_mbps(ops, START, START + SECONDS)
    return tcp["goodput_bps"] / 1e6, cap, tcp["counters"]["fast_recoveries"]


def main():
    extra = sys.argv[1:]
    if not os.access(BRAID, os.X_OK):
        sys.exit(f"radio-sim.py: no {BRAID}; run cargo build --release -p braid first")
    with tempfile.TemporaryDirectory(prefix="braid-radio-") as tmp:
        for _, _, trace in SETS:
            for d in ("up", "down"):
                for off in OFFSETS:
                    ops = rotate_trace.rotate(os.path.join(TRACES, f"{trace}.{d}"), off)
                    with open(os.path.join(tmp, f"{trace}.{d}.{off}"), "w") as f:
                        f.write("".join(f"{o}\n" for o in ops))
        jobs = [(label, fixed, trace, d, off) for label, fixed, trace in SETS
                for d in ("up", "down") for off in OFFSETS]
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            results = list(pool.map(lambda j: run(j, tmp, extra), jobs))
    print(f"# {BRAID} bench --session --resend-losses, tcp:cubic@{START}s for {SECONDS:g} s, "
          f"trace offsets {', '.join(map(str, OFFSETS))} s")
    print("| paths | direction | goodput / capacity (Mbit/s), per offset | mean share | inner fast recoveries |")
    print("|---|---|---|---|---|")
    shares = []
    for (label, _, _, d, _), chunk in zip(jobs[::len(OFFSETS)],
                                          (results[i:i + len(OFFSETS)] for i in range(0, len(results), len(OFFSETS)))):
        share = [g / c for g, c, _ in chunk]
        shares += share
        cells = ", ".join(f"{g:.2f}/{c:.2f}" for g, c, _ in chunk)
        print(f"| {label} | {d} | {cells} | {sum(share) / len(share):.3f} | {sum(r[2] for r in chunk)} |")
    print(f"\nmean share over all {len(shares)} runs: {sum(shares) / len(shares):.3f}")


if __name__ == "__main__":
    main()
