#!/usr/bin/env python3
"""Runs the scenarios of BENCHMARKS.md with `braid bench --json` and prints
their tables in Markdown. Usage:

    cargo build --release -p braid
    python3 scripts/reproduce.py [SECTION...]   # sections: cc udp-proxy layer3 batcp cmt targets speed
    BRAID=/path/to/braid BRAID_TRACES=/path/to/traces python3 scripts/reproduce.py ...
                                                # target/release/braid and traces/ by default

Every figure comes from the simulator with seed 1 unless a table says
otherwise; the exact bench command of each row can be printed with --commands.
"""
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRAID = os.environ.get("BRAID", os.path.join(ROOT, "target", "release", "braid"))
TRACES = os.environ.get("BRAID_TRACES", os.path.join(ROOT, "traces"))
SHOW_COMMANDS = "--commands" in sys.argv
SCHEDULERS = ["earliest-arrival", "min-rtt", "most-free-cwnd", "redundant", "rr", "wrr", "batcp", "lawrr"]


def bench(paths, scheduler="earliest-arrival", traffic="cbr:110%", duration="30s", cc="bbr", extra=()):
    cmd = [BRAID, "bench", "--scheduler", scheduler, "--cc", cc, "--traffic", traffic,
           "--duration", duration, "--json", *extra]
    for p in paths:
        cmd += ["--path", p]
    if SHOW_COMMANDS:
        print("    $ " + " ".join(c if "," not in c and ":" not in c else f"'{c}'" for c in cmd[:-1] if c != "--json"))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def mbit(bps):
    return f"{bps / 1e6:.2f}"


def pct(x, digits=1):
    return f"{x * 100:.{digits}f}%"


def reorder_p99(r):
    """Reorder-delay p99 in ms; "-" when nothing was delivered (null in the JSON)."""
    held = r["reorder_delay_ms"]
    return "-" if held is None else f"{held['p99']:.1f}"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


def wrr_weights(paths_mbit):
    return "wrr:weights=" + "/".join(str(int(round(m * 10))) for m in paths_mbit)


def scheduler_configs(paths_mbit):
    """Every scheduler, wrr weighted by the known capacities, plus the paper's
    most-free-cwnd over CCID2."""
    out = []
    for s in SCHEDULERS:
        out.append((s if s != "wrr" else wrr_weights(paths_mbit), "bbr"))
    out.append(("most-free-cwnd", "ccid2"))
    return out


def udp_proxy():
    print("### multilink-udp-proxy: bandwidth heterogeneity (CBR 10 Mbit/s, RTT 0.5 ms, 10 s)\n")
    rows = []
    for a, b in [(10, 0), (5, 5), (6, 4), (8, 2)]:
        paths = [f"{a}mbit,250us"] + ([f"{b}mbit,250us"] if b else [])
        mb = [a] + ([b] if b else [])
        for sched, cc in (scheduler_configs(mb) if b else [("earliest-arrival", "bbr")]):
            r = bench(paths, sched, "cbr:10mbit", "10s", cc)
            rows.append([f"{a}:{b}", sched.split(":")[0] if not sched.startswith("wrr") else sched, cc,
                         mbit(r["goodput_bps"]), mbit(r["in_order_goodput_bps"]), pct(r["loss_rate"], 2),
                         reorder_p99(r)])
    table(["Mbit/s", "scheduler", "cc", "goodput", "in-order", "loss", "reorder p99 ms"], rows)

    print("### multilink-udp-proxy: latency heterogeneity (5 + 5 Mbit/s, CBR 10 Mbit/s, 10 s)\n")
    rows = []
    for rtt2 in [10, 20, 40, 60, 80, 100]:
        paths = ["5mbit,5ms", f"5mbit,{rtt2 // 2}ms"]
        for sched, cc in scheduler_configs([5, 5]):
            r = bench(paths, sched, "cbr:10mbit", "10s", cc)
            rows.append([f"10:{rtt2}", sched, cc, mbit(r["goodput_bps"]), mbit(r["in_order_goodput_bps"]),
                         pct(r["loss_rate"], 2), reorder_p99(r)])
    table(["RTT ms", "scheduler", "cc", "goodput", "in-order", "loss", "reorder p99 ms"], rows)


PAPER_LAYER3 = {("0.1", "50ms"): "6.25%", ("0.1", "250ms"): "4.72%", ("0.1", "500ms"): "4.1%",
                ("0.5", "50ms"): "1.79%", ("0.5", "250ms"): "0.53%", ("0.5", "500ms"): "0.34%",
                ("1", "50ms"): "1.14%", ("1", "250ms"): "0.29%", ("1", "500ms"): "0.15%"}
LAYER3_PATHS = ["64mbit,6500us,name=fixed", "60mbit,12500us,jitter=10ms,name=lte"]


def layer3():
    print("### multipath-bonding-layer3: 64 Mbit/s fixed (13 ms RTT) + 60 Mbit/s LTE (25-45 ms RTT), "
          "ramp 63 -> 105 -> 63 Mbit/s (15 s rise, 10 s hold, 15 s fall), lawrr, w_fixed 50, w_mobile_max 45, "
          "T_report 50 ms as in the paper\n")
    rows = []
    for k in ["0.1", "0.5", "1"]:
        for t in ["50ms", "250ms", "500ms"]:
            row = [k, t, PAPER_LAYER3[(k, t)]]
            for variant in [",delay=off", ""]:
                r = bench(LAYER3_PATHS, f"lawrr:k={k},t_dwd={t},t_report=50ms{variant}", "ramp:63mbit:105mbit:15s:10s", "40s")
                fixed = r["paths"][0]
                row += [pct(fixed["loss_rate"], 2), pct(fixed["utilization"])]
            rows.append(row)
    table(["k", "t_dwd", "paper's loss", "fixed loss (paper's algorithm)", "fixed util",
           "fixed loss (braid lawrr, delay signal)", "fixed util"], rows)

    print("Same paths under constant overload (CBR 105 Mbit/s, 30 s), every scheduler:\n")
    rows = []
    for sched, cc in scheduler_configs([64, 60]):
        r = bench(LAYER3_PATHS, sched if sched != "lawrr" else "lawrr:k=0.5,t_dwd=250ms", "cbr:105mbit", "30s", cc)
        fixed = r["paths"][0]
        rows.append([sched, cc, pct(fixed["loss_rate"], 2), pct(fixed["utilization"]),
                     mbit(r["paths"][1]["throughput_bps"]), mbit(r["goodput_bps"]), pct(r["loss_rate"], 2)])
    table(["scheduler", "cc", "fixed-line loss", "fixed-line util", "LTE Mbit/s", "goodput", "app loss"], rows)


def batcp():
    evdo = os.path.join(TRACES, "Verizon-EVDO-driving.down")
    print("### batcp: two ADSL-like 0.63 Mbit/s links, and ADSL + 3G (Verizon-EVDO-driving trace); "
          "overloaded (CBR 110 %), 120 s\n")
    rows = []
    cases = [("2 x ADSL", ["630kbit,20ms", "630kbit,20ms"], [0.63, 0.63], "98-100%"),
             ("ADSL + 3G", ["630kbit,20ms", f"trace={evdo},60ms"], [0.63, 0.52], "64-68%")]
    for label, paths, mb, paper in cases:
        for sched, cc in scheduler_configs(mb):
            r = bench(paths, sched, "cbr:110%", "120s", cc)
            rows.append([label, sched, cc, mbit(r["capacity_bps"]), mbit(r["goodput_bps"]),
                         pct(r["utilization"]), paper])
    table(["paths", "scheduler", "cc", "capacity", "goodput", "utilization", "BATCP paper"], rows)


def cmt():
    print("### cmt-thesis: 1, 2 and 3 paths of 10 Mbit/s (one-way 10, 25, 40 ms), overloaded, 30 s\n")
    all_paths = ["10mbit,10ms", "10mbit,25ms", "10mbit,40ms"]
    rows = []
    for n in [1, 2, 3]:
        paths = all_paths[:n]
        configs = scheduler_configs([10] * n) if n > 1 else [("earliest-arrival", "bbr")]
        for sched, cc in configs:
            r = bench(paths, sched, "cbr:110%", "30s", cc)
            rows.append([n, sched, cc, mbit(r["goodput_bps"]), mbit(r["in_order_goodput_bps"]),
                         pct(r["utilization"]), reorder_p99(r)])
    table(["paths", "scheduler", "cc", "goodput", "in-order", "utilization", "reorder p99 ms"], rows)


def fixed_line_lost(r):
    """Packets the first (fixed) path's link dropped: queue, random loss, blackout."""
    link = r["paths"][0]["link"]
    return link["dropped_queue"] + link["dropped_loss"] + link["dropped_blackout"]


def targets():
    print("### Never worse than the best single path (default scheduler, CBR 110 %, 30 s)\n")
    rows = []
    cases = [("10x slower", "20mbit,20ms", "2mbit,20ms"),
             ("10x longer", "20mbit,10ms", "20mbit,100ms"),
             ("5 % lossy", "20mbit,20ms", "20mbit,20ms,loss=5%"),
             ("slower, longer, lossy", "20mbit,10ms", "2mbit,100ms,loss=5%")]
    for label, a, b in cases:
        both = bench([a, b])
        single = max(bench([a])["goodput_bps"], bench([b])["goodput_bps"])
        rows.append([label, f"`{a}` + `{b}`", mbit(single), mbit(both["goodput_bps"]),
                     "yes" if both["goodput_bps"] >= single else "NO"])
    table(["second path", "paths", "best single Mbit/s", "bonded Mbit/s", "bonded >= best"], rows)

    print("### lawrr k=0.5, t_dwd=250 ms, fixed line + LTE, constant overload (CBR 105 Mbit/s), 60 s\n")
    print("Start-up is the first 10 s (a 10 s run of the same seed, identical until then); steady state\n"
          "is the rest of the 60 s run: its losses and packets less the 10 s run's.\n")
    rows = []
    for sched in ["lawrr:k=0.5,t_dwd=250ms", "lawrr:k=0.5,t_dwd=250ms,t_report=50ms",
                  "lawrr:k=0.5,t_dwd=250ms,t_report=50ms,delay=off"]:
        r = bench(LAYER3_PATHS, sched, "cbr:105mbit", "60s")
        start = bench(LAYER3_PATHS, sched, "cbr:105mbit", "10s")
        fixed = r["paths"][0]
        lost, start_lost = fixed_line_lost(r), fixed_line_lost(start)
        steady_sent = fixed["link"]["offered_packets"] - start["paths"][0]["link"]["offered_packets"]
        rows.append([sched, pct(fixed["loss_rate"], 3), f"{start_lost} packets",
                     pct((lost - start_lost) / steady_sent, 3), pct(fixed["utilization"]),
                     mbit(r["paths"][1]["throughput_bps"]), pct(r["loss_rate"], 3)])
    table(["scheduler", "fixed-line loss, 60 s", "lost in start-up", "steady-state loss", "fixed-line util",
           "LTE Mbit/s", "app loss"], rows)

    print("### Constant-rate path + LTE trace (TMobile-LTE-short.down), overloaded (CBR 110 %), 60 s\n")
    tm = os.path.join(TRACES, "TMobile-LTE-short.down")
    rows = []
    for sched, cc in scheduler_configs([20, 16.7]):
        r = bench(["20mbit,20ms", f"trace={tm},30ms"], sched, "cbr:110%", "60s", cc)
        rows.append([sched, cc, mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["utilization"]),
                     reorder_p99(r)])
    table(["scheduler", "cc", "capacity", "goodput", "utilization", "reorder p99 ms"], rows)


def cc():
    print("### Congestion control on random loss (earliest-arrival, CBR 110 %, 30 s)\n")
    rows = []
    cases = [("60 Mbit/s LTE-like path, 1 % loss", ["60mbit,20ms,loss=1%"]),
             ("same, 5 % loss", ["60mbit,20ms,loss=5%"]),
             ("20 Mbit/s DSL + that 1 %-lossy LTE", ["20mbit,8ms", "60mbit,20ms,loss=1%"])]
    for label, paths in cases:
        for c in ["bbr", "ccid2"]:
            r = bench(paths, cc=c)
            rows.append([label, c, mbit(r["capacity_bps"]), mbit(r["goodput_bps"]), pct(r["utilization"])])
    table(["paths", "cc", "capacity", "goodput", "utilization"], rows)


def speed():
    print("### Simulator speed: 60 s, 100 Mbit/s in total over two paths, overloaded (one process, one core)\n")
    rows = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        bench(["50mbit,10ms", "50mbit,30ms"], duration="60s")
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rows.append([f"{cpu:.2f} s", f"{60 / cpu:.0f}x", f"{wall:.2f} s"])
    table(["CPU time", "faster than real time (CPU)", "wall time"], rows)


SECTIONS = {"cc": cc, "udp-proxy": udp_proxy, "layer3": layer3, "batcp": batcp, "cmt": cmt, "targets": targets,
            "speed": speed}

if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__, end="")
        sys.exit(0)
    chosen = [a for a in sys.argv[1:] if not a.startswith("--")] or list(SECTIONS)
    for name in chosen:
        SECTIONS[name]()
