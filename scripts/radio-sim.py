#!/usr/bin/env python3
"""The simulated counterpart of `tunnel-lab.py radio`: a fixed line beside
a radio path (LTE, or 3G while driving) that replays a capacity trace,
one CUBIC flow through the tunnel's session (`braid bench --session
--resend-losses`), upload and download (`--download`: the server's
session sends, as in the lab's `iperf3 -R`), each started 1.5 s into the
run (as the lab's flow starts on a fresh tunnel) and measured for 30 s.
Each set runs over the traces rotated to six offsets (0, 23, ... 115 s), so that one figure rests on six
stretches of each trace rather than one. Prints TCP goodput over the IP
capacity the paths offered in the flow's window, per run and as means,
and how many runs fell below the fixed line alone.

    cargo build --release -p braid
    scripts/radio-sim.py                      # BRAID=... for another binary
    scripts/radio-sim.py --scheduler min-rtt  # further bench flags
    scripts/radio-sim.py --mirror             # downloads as before 2026-12-06: the client
                                              # sends over the paths' directions swapped
    scripts/radio-sim.py --every 6            # offsets 0, 6, ... 132 s: 23 runs a set, not 6,
                                              # for changes smaller than six runs can tell

Deterministic: the same binary prints the same figures on every machine.
"""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import mahimahi

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "traces")
BRAID = os.environ.get("BRAID", "target/release/braid")
OFFSETS = [0, 23, 46, 69, 92, 115]
# (label, fixed line, the radio path's uplink and downlink traces, its one-way delay)
SETS = [
    ("8 Mbit/s at 10 ms + T-Mobile LTE at 30 ms", "8mbit,10ms",
     "TMobile-LTE-short.up", "TMobile-LTE-short.down", "30ms"),
    ("16 Mbit/s at 10 ms + Verizon LTE at 30 ms", "16mbit,10ms",
     "Verizon-LTE-short.up", "Verizon-LTE-short.down", "30ms"),
    # 3G while driving, one trace for both directions.
    ("8 Mbit/s at 10 ms + Verizon 3G at 50 ms", "8mbit,10ms",
     "Verizon-EVDO-driving.down", "Verizon-EVDO-driving.down", "50ms"),
]
START, SECONDS = 1.5, 30.0


def bench_tcp(paths, extra, download=False):
    """The TCP flow's figures of one simulated run over `paths` (SPECs)."""
    cmd = [BRAID, "bench", "--session", "--resend-losses"] + (["--download"] if download else [])
    for p in paths:
        cmd += ["--path", p]
    cmd += ["--traffic", f"tcp:cubic@{START}s", "--duration", f"{START + SECONDS}s", "--json"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["flows"][0]["tcp"]


def run(job, tmp, extra, mirror):
    label, fixed, up, down, delay, direction, offset = job
    files = {t: os.path.join(tmp, f"{t}.{offset}") for t in (up, down)}
    # The data's trace, and the other direction's.
    data, back = (up, down) if direction == "up" else (down, up)
    # The path's first file paces the client-to-server direction; mirrored,
    # the client sends the download over the paths turned round.
    first, second = (data, back) if mirror else (up, down)
    download = direction == "down" and not mirror
    tcp = bench_tcp([fixed, f"trace={files[first]}/{files[second]},{delay}"], extra, download)
    radio = mahimahi.capacity_mbps(mahimahi.read(files[data]), START, START + SECONDS)
    cap = float(fixed.split("mbit")[0]) + radio
    return tcp["goodput_bps"] / 1e6, cap, tcp["counters"]["fast_recoveries"]


def fixed_alone(fixed, extra, download):
    """TCP goodput in Mbit/s over the fixed line alone, the same window."""
    return bench_tcp([fixed], extra, download)["goodput_bps"] / 1e6


def main():
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__, end="")
        sys.exit(0)
    args = sys.argv[1:]
    mirror = "--mirror" in args
    if "--every" in args:
        i = args.index("--every")
        try:
            step = int(args[i + 1])
        except (IndexError, ValueError):
            sys.exit("radio-sim.py: --every needs a whole number of seconds")
        if not 1 <= step <= 137:
            sys.exit("radio-sim.py: --every takes 1 to 137 seconds (offsets stay within the shortest trace, 140 s)")
        OFFSETS[:] = range(0, 137, step)
        del args[i:i + 2]
    extra = [a for a in args if a != "--mirror"]
    if not os.access(BRAID, os.X_OK):
        sys.exit(f"radio-sim.py: no {BRAID}; run cargo build --release -p braid first")
    with tempfile.TemporaryDirectory(prefix="braid-radio-") as tmp:
        for trace in {t for _, _, up, down, _ in SETS for t in (up, down)}:
            for off in OFFSETS:
                ops = mahimahi.rotate(mahimahi.read(os.path.join(TRACES, trace)), off)
                with open(os.path.join(tmp, f"{trace}.{off}"), "w") as f:
                    f.write("".join(f"{o}\n" for o in ops))
        # Mirrored, a radio path with one trace both ways needs one
        # direction only; otherwise the two differ in who sends.
        jobs = [s + (d, off) for s in SETS for d in (("up",) if mirror and s[2] == s[3] else ("up", "down"))
                for off in OFFSETS]
        lines = sorted({(s[1], d) for s in SETS for d in ("up", "down")})
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            results = list(pool.map(lambda j: run(j, tmp, extra, mirror), jobs))
            alone = dict(zip(lines, pool.map(lambda l: fixed_alone(l[0], extra, l[1] == "down" and not mirror),
                                             lines)))
    print(f"# {BRAID} bench --session --resend-losses, tcp:cubic@{START}s for {SECONDS:g} s, "
          f"trace offsets {', '.join(map(str, OFFSETS))} s; downloads "
          + ("by the client over the paths mirrored" if mirror else "sent by the server (--download)"))
    print("| paths | direction | goodput / capacity (Mbit/s), per offset | mean share | inner fast recoveries "
          "| the fixed line alone (Mbit/s) | runs below it |")
    print("|---|---|---|---|---|---|---|")
    shares = []
    for (label, fixed, _, _, _, d, _), chunk in zip(jobs[::len(OFFSETS)],
                                          (results[i:i + len(OFFSETS)] for i in range(0, len(results), len(OFFSETS)))):
        share = [g / c for g, c, _ in chunk]
        shares += share
        cells = ", ".join(f"{g:.2f}/{c:.2f}" for g, c, _ in chunk)
        below = sum(1 for g, _, _ in chunk if g < alone[(fixed, d)])
        print(f"| {label} | {d} | {cells} | {sum(share) / len(share):.3f} | {sum(r[2] for r in chunk)} "
              f"| {alone[(fixed, d)]:.2f} | {below} of {len(chunk)} |")
    print(f"\nmean share over all {len(shares)} runs: {sum(shares) / len(shares):.3f}")


if __name__ == "__main__":
    main()
