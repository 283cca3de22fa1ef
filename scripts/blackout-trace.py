#!/usr/bin/env python3
"""What the tunnel does around a blackout (BENCHMARKS.md, "The
acknowledgements' path after a cut"): one CUBIC flow on 64 + 60 Mbit/s
(6.5 / 12.5 ms), path 1 cut 8 s in. From 0.4 s before the cut to 2.5 s
after, about every 60 ms: the client's `braid status --json` (send queue,
drops, reinjections, each path's window and flight), the server's drops,
and the inner TCP's window (`ss -tin` in the client namespace); then the
receiver's goodput per 0.1 s.

Needs root, iperf3 and a release build (BRAID=target/release/braid by
default). Makes one lab, `${LAB_PREFIX:-bt}-trace`, and takes it down on
exit, also on an error, Ctrl-C or SIGTERM; every command has a timeout.

    sudo scripts/blackout-trace.py [RUNS]
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

BRAID = os.environ.get("BRAID", "target/release/braid")
LAB = os.environ.get("LAB_PREFIX", "bt") + "-trace"
SOCKET = f"/run/braid-lab/{LAB}.tunnel/client.sock"
SERVER_SOCKET = f"/run/braid-lab/{LAB}.tunnel/server.sock"
P1, P2 = "64mbit,6500us", "60mbit,12500us"


def run(args, timeout=60):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def status():
    """The client's session, and the server's session with that client
    (which carries the inner TCP's acknowledgements)."""
    client = json.loads(run([BRAID, "status", "--socket", SOCKET, "--json"], timeout=5).stdout)
    server = json.loads(run([BRAID, "status", "--socket", SERVER_SOCKET, "--json"], timeout=5).stdout)
    return client["session"], server["peers"][0]["session"]


def inner_tcp():
    """The iperf3 data connection's cwnd (segments), ssthresh and smoothed
    RTT, as the client's kernel sees them (`ss -tin`)."""
    out = run([BRAID, "lab", "exec", "--name", LAB, "client", "--", "ss", "-tin", "dst", "10.77.0.1"],
              timeout=5).stdout
    out = out.replace("\n", " ")
    best = None
    for m in re.finditer(r"cwnd:(\d+)(?: ssthresh:(\d+))?.*?bytes_sent:(\d+)", out):
        if best is None or int(m.group(3)) > int(best.group(3)):
            best = m
    if best is None:
        return "tcp -"
    line = out[best.start():]
    extra = " ".join(f"{k} {m.group(1)}" for k in ("unacked", "sacked", "lost", "retrans", "snd_wnd", "rtt")
                     if (m := re.search(rf"\b{k}:([0-9./]+)", line)))
    return f"tcp cwnd {best.group(1)} ssthresh {best.group(2) or '-'} {extra}"


def down(*_):
    run([BRAID, "lab", "down", "--name", LAB], timeout=30)
    sys.exit(1)


def trace(r):
    exec_ = [BRAID, "lab", "exec", "--name", LAB]
    srv = subprocess.Popen(exec_ + ["server", "--", "timeout", "30", "iperf3", "-s", "-1", "-B", "10.77.0.1",
                                    "-i", "0.1", "--forceflush"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    cli = subprocess.Popen(exec_ + ["client", "--", "timeout", "30", "iperf3", "-c", "10.77.0.1", "-C", "cubic",
                                    "-t", "12", "-J"], stdout=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    time.sleep(7.6)
    rows, cut = [], None
    while time.monotonic() - t0 < 10.5:
        if cut is None and time.monotonic() - t0 >= 8.0:
            run([BRAID, "lab", "set", "--name", LAB, "p1", f"{P1},blackout=0s+10s"])
            cut = time.monotonic()
        rows.append((time.monotonic(), status(), inner_tcp()))
        time.sleep(0.04)
    end = json.loads(cli.communicate(timeout=40)[0])["end"]["sum_sent"]
    report = srv.communicate(timeout=40)[0]
    run([BRAID, "lab", "set", "--name", LAB, "p1", P1])
    print(f"== run {r}: {end['bits_per_second'] / 1e6:.1f} Mbit/s, {end.get('retransmits')} TCP retransmits")
    prev = None
    for t, (s, srv), tcp in rows:
        p1, p2 = s["paths"]
        delta = "" if prev is None else " ".join(
            f"{k}+{s['send_' + k] - prev[0]['send_' + k]}" for k in ("dropped", "reinjected", "resent"))
        back = "" if prev is None else (
            f" | server p1 {srv['paths'][0]['state']} flight {srv['paths'][0]['in_flight_bytes'] / 1e3:.0f} kB "
            f"dropped+{srv['send_dropped'] - prev[1]['send_dropped']} "
            f"client skipped+{s['reseq']['skipped'] - prev[0]['reseq']['skipped']}")
        print(f"{t - cut:+.2f} s queue {s['send_queue_bytes'] / 1e3:.0f} kB {delta} | p1 {p1['state']} "
              f"flight {p1['in_flight_bytes'] / 1e3:.0f} kB | p2 window {p2['cwnd_bytes'] / 1e3:.0f} kB "
              f"flight {p2['in_flight_bytes'] / 1e3:.0f} kB rate {(p2['send_rate_bps'] or 0) / 1e6:.0f} "
              f"rtt {p2['rtt_ms']:.0f} ms | {tcp}{back}")
        prev = (s, srv)
    points = []
    for line in report.splitlines():
        m = re.search(r"\s([0-9.]+)-([0-9.]+)\s+sec\s.*?\s([0-9.]+) ([KMG])bits/sec", line)
        if m and float(m.group(2)) - float(m.group(1)) < 0.5:
            points.append((float(m.group(2)), float(m.group(3)) * {"K": 1e-3, "M": 1, "G": 1e3}[m.group(4)]))
    print("goodput (s since start: Mbit/s)", " ".join(f"{t:.1f}:{v:.0f}" for t, v in points if 7.5 <= t <= 10.5))


def main():
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__, end="")
        sys.exit(0)
    if shutil.which("iperf3") is None:
        sys.exit("blackout-trace.py: iperf3 is not installed (apt-get install iperf3)")
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    signal.signal(signal.SIGTERM, down)
    signal.signal(signal.SIGINT, down)
    run([BRAID, "lab", "down", "--name", LAB], timeout=30)
    try:
        up = run([BRAID, "lab", "up", "--tunnel", "--name", LAB, "--seed", "1", "--path", P1, "--path", P2])
        if up.returncode != 0:
            sys.exit(f"lab up: {up.stderr.strip()}")
        time.sleep(1)
        for r in range(1, runs + 1):
            trace(r)
            time.sleep(3)
    finally:
        run([BRAID, "lab", "down", "--name", LAB], timeout=30)


if __name__ == "__main__":
    main()
