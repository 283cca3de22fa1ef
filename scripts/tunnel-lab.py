#!/usr/bin/env python3
"""Lab figures of the real tunnel (issue 9, BENCHMARKS.md "Tunnel (lab)"):

  latency   one CUBIC flow saturates the tunnel while `ping -i 0.2` runs
            through it: p50/p95 RTT loaded vs idle;
  blackout  a 10 s blackout of one of two paths during a CUBIC transfer:
            time until goodput is back to 80 % of the surviving path for
            good (every 1-s mean after it, until the path returns), time
            until the path carries its share again after its return;
  veth      one CUBIC flow through the tunnel on two `direct` (plain veth)
            paths vs raw veth between the same namespaces, with CPU per
            Gbit/s;
  radio     a fixed line beside an LTE path that replays a capacity trace
            (traces/): one 30-s CUBIC flow through the bond, through each
            path alone and (with mptcpize) over kernel MPTCP, upload and
            download, each on a fresh lab so that every run meets the same
            stretch of the trace; goodput over the capacity the paths
            offered in the run's window (--plain: also plain TCP on each
            path alone, no tunnel);
  stall     one 20-s CUBIC flow through the bond and over kernel MPTCP on
            8 + 12 Mbit/s at 10/30 ms while, every 2 s, the lab's emulator
            (network), or the emulator and braid's daemons (hosts), are
            stopped for --stall-ms (300): what a stalled network or host
            costs each.

--reverse runs the transfers the other way (iperf3 -R): the server's
session sends, and the blackout's goodput and path counters are read at
the client's end and on the emulator's down links.

Needs root, iperf3 and a release build (BRAID=target/release/braid by
default). Every lab it makes is named `tl-*` (LAB_PREFIX=x: `x-*`, so that
two runs side by side do not meet) and taken down on exit, also on an error,
Ctrl-C or SIGTERM; every command has a timeout. Prints one line
per run and a summary per set.

    sudo scripts/tunnel-lab.py latency blackout veth --runs 3
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import mahimahi

BRAID = os.environ.get("BRAID", "target/release/braid")
LAB_PREFIX = os.environ.get("LAB_PREFIX", "tl")
SERVER_TUN = "10.77.0.1"
SERVER_ADDR = "198.19.0.1"
LABS = []


def run(args, timeout=60, check=True):
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return out


def lab_exec(name, side, argv):
    return [BRAID, "lab", "exec", "--name", name, side, "--"] + argv


def lab_up(name, specs, tunnel=True):
    run([BRAID, "lab", "down", "--name", name], check=False)
    LABS.append(name)
    args = [BRAID, "lab", "up"] + (["--tunnel"] if tunnel else []) + ["--name", name, "--seed", "1"]
    for s in specs:
        args += ["--path", s]
    run(args, timeout=60)


def lab_down(name):
    run([BRAID, "lab", "down", "--name", name], check=False, timeout=30)
    if name in LABS:
        LABS.remove(name)


def cleanup():
    for name in list(LABS):
        lab_down(name)


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


def quantile(values, q):
    """Nearest-rank quantile."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(q * len(s) + 0.5)) - 1))
    return s[k]


def ping(name, count, interval="0.2"):
    out = run(
        lab_exec(name, "client", ["ping", "-n", "-i", interval, "-c", str(count), "-W", "2", SERVER_TUN]),
        timeout=count * float(interval) + 20,
        check=False,
    )
    rtts = [float(m) for m in re.findall(r"time=([0-9.]+) ms", out.stdout)]
    return rtts, count - len(rtts)


def iperf_server(name, bind, extra=(), wrap=()):
    """`wrap`: a command the server runs under (mptcpize run)."""
    return subprocess.Popen(
        lab_exec(name, "server", list(wrap) + ["iperf3", "-s", "-1", "-B", bind] + list(extra)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def iperf_client(name, dest, seconds, extra=("-J",), wrap=()):
    # iperf3 may print before the server listens: retry the connect briefly.
    time.sleep(0.3)
    return subprocess.Popen(
        lab_exec(name, "client", list(wrap) + ["iperf3", "-c", dest, "-C", "cubic", "-t", str(seconds)]
                 + list(extra)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def iperf_result(proc, timeout):
    out, err = proc.communicate(timeout=timeout)
    data = json.loads(out)
    if "error" in data:
        raise RuntimeError(f"iperf3: {data['error']}")
    end = data["end"]
    return {
        "sent_mbps": end["sum_sent"]["bits_per_second"] / 1e6,
        "received_mbps": end["sum_received"]["bits_per_second"] / 1e6,
        "retransmits": end["sum_sent"].get("retransmits"),
        # The client's intervals: what it sent (upload) or received (-R).
        "interval_mbps": [i["sum"]["bits_per_second"] / 1e6 for i in data["intervals"]],
        # The sending end's smoothed round trip (TCP_INFO), µs: its mean
        # over the run, and its value at the end of each second (the
        # client's own intervals: uploads only).
        "mean_rtt_us": next((st["sender"].get("mean_rtt") for st in end.get("streams", [])
                             if "sender" in st), None),
        "interval_rtt_us": [st["rtt"] for i in data["intervals"] for st in i["streams"] if "rtt" in st],
    }


def iperf_text_result(proc, lines, timeout):
    """The totals in `lines`, an iperf3 client's text output (for runs whose
    interval lines are read as they come, where -J would hold them back)."""
    proc.wait(timeout=timeout)
    res = {}
    for line in lines:
        m = re.search(r"\s([0-9.]+) ([KMG])bits/sec\s+(\d+)?\s*(sender|receiver)\s*$", line)
        if m:
            mbps = float(m.group(1)) * {"K": 1e-3, "M": 1.0, "G": 1e3}[m.group(2)]
            if m.group(4) == "sender":
                res["sent_mbps"], res["retransmits"] = mbps, m.group(3)
            else:
                res["received_mbps"] = mbps
    if len(res) != 3:
        raise RuntimeError("iperf3: no totals in its output")
    return res


def tunnel_status(name, side="client"):
    sock = f"/run/braid-lab/{name}.tunnel/{side}.sock"
    out = run([BRAID, "status", "--json", "--socket", sock], check=False, timeout=10)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return None


def load():
    return open("/proc/loadavg").read().split()[:3]


# ---------------------------------------------------------------- latency


def latency(args):
    sets = [
        ("8+2 Mbit/s, 10/40 ms", ["8mbit,10ms", "2mbit,40ms"]),
        ("64+60 Mbit/s, 6.5/12.5 ms", ["64mbit,6500us", "60mbit,12500us"]),
        # Control: the 8+2 set's fast path alone, so no resequencing.
        ("8 Mbit/s, 10 ms, one path", ["8mbit,10ms"]),
    ]
    for label, specs in sets:
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        name = f"{LAB_PREFIX}-lat"
        lab_up(name, specs)
        try:
            # A first transfer warms the tunnel (the first run on a fresh
            # tunnel is the slow one, see the throughput table).
            srv = iperf_server(name, SERVER_TUN)
            iperf_result(iperf_client(name, SERVER_TUN, 5), 30)
            srv.wait(timeout=10)
            print(f"# latency under load: {label}{', download' if args.reverse else ''}; load average {' '.join(load())}", flush=True)
            for r in range(1, args.runs + 1):
                start = lab_json(name)
                idle, idle_lost = ping(name, args.pings)
                srv = iperf_server(name, SERVER_TUN)
                seconds = args.pings * 0.2 + 5
                cli = iperf_client(name, SERVER_TUN, int(seconds), (["-R"] if args.reverse else []) + ["-J"])
                time.sleep(3)
                loaded, loaded_lost = ping(name, args.pings)
                res = iperf_result(cli, seconds + 30)
                srv.wait(timeout=10)
                st = tunnel_status(name)
                sq = (st or {}).get("session", {})
                rise = quantile(loaded, 0.95) - quantile(idle, 0.95)
                print(
                    f"run {r}: idle p50 {quantile(idle, 0.5):.1f} p95 {quantile(idle, 0.95):.1f} ms "
                    f"({len(idle)} replies, {idle_lost} lost); loaded p50 {quantile(loaded, 0.5):.1f} "
                    f"p95 {quantile(loaded, 0.95):.1f} max {max(loaded, default=float('nan')):.1f} ms "
                    f"({len(loaded)} replies, {loaded_lost} lost); p95 rise {rise:.1f} ms; "
                    f"TCP {res['sent_mbps']:.2f} ({res['received_mbps']:.2f}) Mbit/s, "
                    f"{res['retransmits']} retransmits; emulator behind {behind_s(start, lab_json(name)):.2f} s; "
                    f"load {' '.join(load())}",
                    flush=True,
                )
                if args.verbose and st is not None:
                    print(json.dumps(sq, indent=1), flush=True)
        finally:
            lab_down(name)


# ---------------------------------------------------------------- blackout


class Stamped(threading.Thread):
    """Reads a process's output lines, each stamped with the time it came."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.lines = []

    def run(self):
        for line in self.stream:
            self.lines.append((time.monotonic(), line))


class Counters(threading.Thread):
    """Samples the emulator's forwarded bytes per path in one direction
    (`up`: client to server, or `down`)."""

    def __init__(self, name, period, direction):
        super().__init__(daemon=True)
        self.name, self.period, self.direction = name, period, direction
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            out = run([BRAID, "lab", "status", "--json", "--name", self.name], check=False, timeout=10)
            t = time.monotonic()
            try:
                paths = json.loads(out.stdout)["paths"]
                self.samples.append((t, [p[self.direction]["counters"]["forwarded_bytes"] for p in paths]))
            except (json.JSONDecodeError, KeyError, TypeError):
                pass
            self.stop.wait(self.period)


def rate_series(samples, index):
    """(end time, Mbit/s) between consecutive counter samples of a path."""
    return [
        (t1, (b1[index] - b0[index]) * 8 / (t1 - t0) / 1e6)
        for (t0, b0), (t1, b1) in zip(samples, samples[1:])
    ]


def recovery(series, start, end, threshold, window):
    """Seconds from `start` until `series` is back at `threshold` for good:
    the start of the first interval after `start` from which the mean over
    every `window` seconds up to `end` is at or above it; 0 if it never
    fell below, None if it never came back. One short report below the
    threshold beside one above it (iperf3's interval timer splits one
    interval's bytes over two reports) averages out; a dip that lasts does
    not, however late it comes."""
    pts = [(t, v) for t, v in series if start < t <= end]
    if all(v >= threshold for _, v in pts):
        return 0.0

    def holds(i):
        t = pts[i][0]
        span = [v for u, v in pts[i:] if u <= t + window]
        return sum(span) / len(span) >= threshold

    # Windows that would reach past `end` are not judged.
    judged = [i for i, (t, _) in enumerate(pts) if t + window <= end]
    failing = [i for i in judged if not holds(i)]
    if not judged or (failing and failing[-1] == judged[-1]):
        return None
    if not failing:
        return 0.0
    # Back from the window after the last that fell; a point stands for the
    # interval that ended at its time.
    return pts[failing[-1]][0] - start


def blackout(args):
    sets = [
        ("64+60 Mbit/s, 6.5/12.5 ms, p1 cut", ["64mbit,6500us", "60mbit,12500us"], 0, 60.0),
        ("8+2 Mbit/s, 10/40 ms, p1 cut", ["8mbit,10ms", "2mbit,40ms"], 0, 2.0),
    ]
    cut_at, cut_len, total = 8.0, 10.0, 26
    for label, specs, cut, surviving in sets:
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        name = f"{LAB_PREFIX}-blk"
        lab_up(name, specs)
        try:
            srv = iperf_server(name, SERVER_TUN)
            iperf_result(iperf_client(name, SERVER_TUN, 5), 30)
            srv.wait(timeout=10)
            print(f"# blackout: {label} for {cut_len:.0f} s{', download' if args.reverse else ''}; load average {' '.join(load())}", flush=True)
            for r in range(1, args.runs + 1):
                # Goodput is read where the data arrives, each 0.1-s report
                # stamped as it is printed.
                if args.reverse:
                    srv = iperf_server(name, SERVER_TUN)
                    cli = iperf_client(name, SERVER_TUN, total, ["-R", "-i", "0.1", "--forceflush"])
                    stamps = Stamped(cli.stdout)
                else:
                    srv = iperf_server(name, SERVER_TUN, ["-i", "0.1", "--forceflush"])
                    stamps = Stamped(srv.stdout)
                stamps.start()
                start = lab_json(name)
                counters = Counters(name, 0.1, "down" if args.reverse else "up")
                counters.start()
                if not args.reverse:
                    cli = iperf_client(name, SERVER_TUN, total)
                t_start = time.monotonic()
                time.sleep(cut_at - 1)
                if args.verbose:
                    st = (tunnel_status(name) or {}).get("session", {})
                    keys = ("state", "cwnd_bytes", "in_flight_bytes", "send_rate_bps", "rtt_ms", "min_rtt_ms")
                    for p in st.get("paths", []):
                        print(f" {p['name']} 1 s before the cut:", {k: p.get(k) for k in keys}, flush=True)
                time.sleep(1)
                t0 = time.monotonic()
                run([BRAID, "lab", "set", "--name", name, f"p{cut + 1}",
                     f"{specs[cut]},blackout=0s+{cut_len:g}s"])
                t1 = time.monotonic()
                t_cut = (t0 + t1) / 2
                if args.reverse:
                    stamps.join(timeout=total + 30)
                    res = iperf_text_result(cli, [line for _, line in stamps.lines], 10)
                else:
                    res = iperf_result(cli, total + 30)
                srv.wait(timeout=10)
                stamps.join(timeout=5)
                counters.stop.set()
                counters.join(timeout=15)
                # Receiver goodput per 0.1 s interval, stamped at its print.
                goodput = []
                for t, line in stamps.lines:
                    m = re.search(r"\s([0-9.]+)-([0-9.]+)\s+sec\s.*?\s([0-9.]+) ([KMG])bits/sec", line)
                    if m and float(m.group(2)) - float(m.group(1)) < 0.5:
                        scale = {"K": 1e-3, "M": 1.0, "G": 1e3}[m.group(4)]
                        goodput.append((t, float(m.group(3)) * scale))
                t_back = t_cut + cut_len
                mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
                before = [v for t, v in goodput if t_cut - 4 <= t < t_cut]
                during = [v for t, v in goodput if t_cut + 1 <= t < t_back]
                after = [v for t, v in goodput if t_back + 2 <= t < t_back + 6]
                # Over 1-s windows: on the 2-Mbit/s survivor one inner fast
                # recovery stalls the in-order goodput for a round trip
                # (0.1-0.2 s), which 0.5-s windows would count as a fall.
                recover = recovery(goodput, t_cut, t_back, 0.8 * surviving, 1.0)
                lowest_second = min(
                    (
                        mean([v for u, v in goodput if t < u <= t + 1])
                        for t, _ in goodput
                        if t_cut + 1 <= t and t + 1 <= t_back
                    ),
                    default=float("nan"),
                )
                path = rate_series(counters.samples, cut)
                share = [v for t, v in path if t_cut - 4 <= t < t_cut]
                share_mean = mean(share)
                back = recovery(path, t_back, t_back + 6, 0.8 * share_mean, 0.5)
                dip = min((v for t, v in goodput if t_cut <= t < t_cut + 1), default=float("nan"))
                fmt = lambda x: "never" if x is None else f"{x:.2f} s"
                print(
                    f"run {r}: goodput before {mean(before):.1f}, lowest 0.1 s in the 1 s after the cut "
                    f"{dip:.1f}, during (1-10 s) {mean(during):.1f} (lowest 1-s mean {lowest_second:.2f}), "
                    f"after (2-6 s) {mean(after):.1f} Mbit/s; "
                    f"back to 80 % of the surviving {surviving:g} Mbit/s for good after {fmt(recover)}; "
                    f"p{cut + 1} carried {share_mean:.1f} Mbit/s before, back to 80 % of that "
                    f"{fmt(back)} after its return; TCP {res['sent_mbps']:.2f} ({res['received_mbps']:.2f}) "
                    f"Mbit/s, {res['retransmits']} retransmits; iperf3 start to cut {t_cut - t_start:.2f} s; "
                    f"emulator behind {behind_s(start, lab_json(name)):.2f} s; load {' '.join(load())}",
                    flush=True,
                )
                if args.verbose:
                    print(" goodput:", " ".join(f"{t - t_cut:.1f}:{v:.0f}" for t, v in goodput), flush=True)
                    print(" path:", " ".join(f"{t - t_cut:.1f}:{v:.0f}" for t, v in path), flush=True)
                run([BRAID, "lab", "set", "--name", name, f"p{cut + 1}", specs[cut]])
        finally:
            lab_down(name)


# ---------------------------------------------------------------- veth


def daemon_pids(name):
    pids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        for side in ("client", "server"):
            if f"{name}.tunnel/{side}.toml".encode() in b" ".join(cmd):
                pids[side] = int(pid)
    return pids


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(argv, timeout):
    """Runs argv; returns (stdout, CPU seconds of it and its waited-for children)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return out, usage.ru_utime + usage.ru_stime


def veth(args):
    name = f"{LAB_PREFIX}-veth"
    lab_up(name, ["direct", "direct"])
    seconds = 10
    try:
        print(f"# data plane on plain veth, one CUBIC flow, {seconds} s; load average {' '.join(load())}", flush=True)
        for label, dest in [("raw veth", SERVER_ADDR), ("tunnel", SERVER_TUN)]:
            for r in range(1, args.runs + 1):
                pids = daemon_pids(name)
                daemons0 = {s: cpu_seconds(p) for s, p in pids.items()}
                srv = subprocess.Popen(
                    lab_exec(name, "server", ["iperf3", "-s", "-1", "-B", dest]),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                time.sleep(0.3)
                out, client_cpu = timed(
                    lab_exec(name, "client", ["iperf3", "-c", dest, "-C", "cubic", "-t", str(seconds), "-J"]),
                    seconds + 30,
                )
                _, status, usage = os.wait4(srv.pid, 0)
                srv.returncode = os.waitstatus_to_exitcode(status)
                server_cpu = usage.ru_utime + usage.ru_stime
                daemons = {s: cpu_seconds(p) - daemons0[s] for s, p in pids.items()}
                end = json.loads(out)["end"]
                gbps = end["sum_received"]["bits_per_second"] / 1e9
                secs = end["sum_received"]["seconds"]
                d = sum(daemons.values()) if label == "tunnel" else 0.0
                iperf = client_cpu + server_cpu
                print(
                    f"{label} run {r}: {end['sum_sent']['bits_per_second'] / 1e9:.3f} ({gbps:.3f}) Gbit/s, "
                    f"{end['sum_sent'].get('retransmits')} retransmits; CPU over the run: iperf3 "
                    f"{iperf:.2f} s, braid client {daemons.get('client', 0):.2f} s + server "
                    f"{daemons.get('server', 0):.2f} s; cores per Gbit/s: braid {d / secs / gbps:.2f}, "
                    f"all {(d + iperf) / secs / gbps:.2f}; load {' '.join(load())}",
                    flush=True,
                )
    finally:
        lab_down(name)


# ---------------------------------------------------------------- radio


def capacity_mbps(settings, traces, t0, t1):
    """IP capacity in Mbit/s of one direction of an emulated path over the
    emulator's time window [t0, t1) s: its rate, or its trace's 1500-byte
    opportunities (the trace, a file named so in `traces`, repeats after
    its last one)."""
    if settings.get("rate_bps"):
        return settings["rate_bps"] / 1e6
    ops = mahimahi.read(os.path.join(traces, os.path.basename(settings["trace"])))
    return mahimahi.capacity_mbps(ops, t0, t1)


def lab_json(name):
    return json.loads(run([BRAID, "lab", "status", "--json", "--name", name], timeout=10).stdout)


def behind_s(before, after):
    """The longest any emulated direction ran more than 0.5 ms behind its
    schedule between two `braid lab status --json` readings, in seconds:
    the longest its link can have idled for the emulator's lateness (a
    machine whose host takes its CPUs away stalls the emulator)."""
    total = lambda status: [p[k]["counters"]["behind_us"] for p in status["paths"] for k in ("up", "down")
                            if p.get(k)]
    return max((a - b for b, a in zip(total(before), total(after))), default=0) / 1e6


def inner_rtt(res):
    """The inner flow's round trip as its sender saw it, for one run's line."""
    text = ""
    if res["mean_rtt_us"]:
        text += f" inner srtt mean {res['mean_rtt_us'] / 1e3:.0f} ms"
    per_second = sorted(res["interval_rtt_us"])
    if per_second:
        text += (f", per second p50 {per_second[len(per_second) // 2] / 1e3:.0f} "
                 f"max {per_second[-1] / 1e3:.0f} ms")
    return text + ";" if text else ""


def mptcp_setup(name, paths):
    """Lets kernel MPTCP open a subflow on each of the lab's `paths`;
    returns the command prefix that makes iperf3 use it."""
    for ns in ("client", "server"):
        run(lab_exec(name, ns, ["ip", "mptcp", "limits", "set", "subflow", "8", "add_addr_accepted", "8"]))
    for i in range(2, paths + 1):
        run(lab_exec(name, "client", ["ip", "mptcp", "endpoint", "add", f"198.18.{i}.2", "dev", f"p{i}",
                                      "subflow"]))
    return ["mptcpize", "run"]


def radio(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces")
    t = lambda up, down: f"trace={os.path.join(root, up)}/{os.path.join(root, down)},30ms"
    sets = [
        ("8 Mbit/s at 10 ms + T-Mobile LTE at 30 ms",
         ["8mbit,10ms", t("TMobile-LTE-short.up", "TMobile-LTE-short.down")]),
        ("16 Mbit/s at 10 ms + Verizon LTE at 30 ms",
         ["16mbit,10ms", t("Verizon-LTE-short.up", "Verizon-LTE-short.down")]),
        # 3G while driving, both ways: a path worth 0.5 Mbit/s with outages,
        # where the bond must not fall below the fixed line alone.
        ("8 Mbit/s at 10 ms + Verizon 3G at 50 ms",
         ["8mbit,10ms", f"trace={os.path.join(root, 'Verizon-EVDO-driving.down')},50ms"]),
    ]
    seconds = 30
    mptcp = shutil.which("mptcpize") is not None
    if not mptcp:
        print("# no mptcpize (apt-get install mptcpd): kernel MPTCP runs left out", flush=True)
    name = f"{LAB_PREFIX}-radio"
    for label, specs in sets:
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        print(f"# radio: {label}, one CUBIC flow, {seconds} s per run, a fresh lab each; "
              f"load average {' '.join(load())}", flush=True)
        flows = [("bond", specs, True)] + [(f"p{i + 1} alone", [s], True) for i, s in enumerate(specs)]
        if mptcp:
            flows.append(("kernel MPTCP", specs, False))
        if args.plain:
            # One TCP flow on one path with no tunnel: what the path gives
            # TCP by itself (an MPTCP connection with no second subflow).
            flows += [(f"p{i + 1} plain", [s], False) for i, s in enumerate(specs)]
        if args.flow:
            flows = [f for f in flows if f[0] in args.flow]
        for r in range(1, args.runs + 1):
            for direction in ("up", "down"):
                for flow, paths, tunnel in flows:
                    lab_up(name, paths, tunnel)
                    try:
                        dest = SERVER_TUN if tunnel else SERVER_ADDR
                        wrap = mptcp_setup(name, len(paths)) if flow == "kernel MPTCP" else []
                        time.sleep(1)
                        srv = iperf_server(name, dest, wrap=wrap)
                        start = lab_json(name)
                        t0 = start["emulator"]["uptime_s"]
                        cli = iperf_client(name, dest, seconds, ["-J"] + (["-R"] if direction == "down" else []),
                                           wrap=wrap)
                        res = iperf_result(cli, seconds + 30)
                        status = lab_json(name)
                        t1 = status["emulator"]["uptime_s"]
                        srv.wait(timeout=10)
                        got = res["received_mbps"]
                        cap = sum(capacity_mbps(p[direction]["settings"], root, t0, t1) for p in status["paths"])
                        print(f"run {r} {direction:4} {flow:12}: {got:6.2f} Mbit/s received of {cap:6.2f} offered "
                              f"({got / cap:.3f}); sender {res['sent_mbps']:.2f}, "
                              f"{res['retransmits']} retransmits;{inner_rtt(res)} window {t0:.1f}-{t1:.1f} s, "
                              f"emulator behind {behind_s(start, status):.2f} s; "
                              f"load {' '.join(load())}", flush=True)
                        if args.verbose:
                            print("  per second:", " ".join(f"{v:.1f}" for v in res["interval_mbps"]), flush=True)
                    finally:
                        lab_down(name)


# ---------------------------------------------------------------- stall


def pids_of(pattern):
    out = run(["pgrep", "-f", pattern], check=False).stdout.split()
    return [int(x) for x in out]


class Staller(threading.Thread):
    """Stops `pids` (SIGSTOP) for `stall` s every `every` s, from 3 s on,
    until stopped; counts the stalls."""

    def __init__(self, pids, stall, every):
        super().__init__(daemon=True)
        self.pids, self.stall, self.every = pids, stall, every
        self.done = threading.Event()
        self.count = 0

    def signal(self, sig):
        for pid in self.pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def run(self):
        if not self.pids or self.done.wait(3):
            return
        while not self.done.is_set():
            self.signal(signal.SIGSTOP)
            time.sleep(self.stall)
            self.signal(signal.SIGCONT)
            self.count += 1
            self.done.wait(self.every)

    def stop(self):
        self.done.set()
        self.join()
        self.signal(signal.SIGCONT)


def sending_side(name, direction):
    """The sending daemon's session figures (`braid status --json`)."""
    st = tunnel_status(name, "server" if direction == "down" else "client") or {}
    return st.get("session") or ((st.get("peers") or [{}])[0].get("session") or {})


def stall(args):
    specs = ["8mbit,10ms", "12mbit,30ms"]
    seconds, pause, every = 20, args.stall_ms / 1e3, 2.0
    flows = ["bond"] + (["kernel MPTCP"] if shutil.which("mptcpize") else [])
    if len(flows) == 1:
        print("# no mptcpize (apt-get install mptcpd): kernel MPTCP runs left out", flush=True)
    if args.flow:
        flows = [f for f in flows if f in args.flow]
    name = f"{LAB_PREFIX}-stall"
    print(f"# stall: {' + '.join(specs)}, one CUBIC flow, {seconds} s per run, a fresh lab each; from 3 s "
          f"on, every {every:.0f} s: nothing stopped (none), the emulator stopped (network) or the emulator "
          f"and braid's daemons (hosts) for {args.stall_ms} ms; load average {' '.join(load())}", flush=True)
    for r in range(1, args.runs + 1):
        for direction in ("up", "down"):
            for mode in ("none", "network", "hosts"):
                for flow in flows:
                    tunnel = flow == "bond"
                    lab_up(name, specs, tunnel)
                    try:
                        dest = SERVER_TUN if tunnel else SERVER_ADDR
                        wrap = [] if tunnel else mptcp_setup(name, len(specs))
                        time.sleep(1)
                        pids = []
                        if mode != "none":
                            pids = pids_of(f"lab _emulate --state /run/braid-lab/{name}$")
                        if mode == "hosts":
                            # Kernel MPTCP has no process to stop.
                            pids += daemon_pids(name).values()
                        srv = iperf_server(name, dest, wrap=wrap)
                        start = lab_json(name)
                        cli = iperf_client(name, dest, seconds, ["-J"] + (["-R"] if direction == "down" else []),
                                           wrap=wrap)
                        staller = Staller(pids, pause, every)
                        staller.start()
                        try:
                            res = iperf_result(cli, seconds + 30)
                        finally:
                            staller.stop()
                        status = lab_json(name)
                        srv.wait(timeout=10)
                        induced = staller.count * pause if mode != "none" else 0
                        extra = ""
                        if tunnel:
                            st = sending_side(name, direction)
                            extra = (f" sender's queue drops {st.get('send_dropped')}, CoDel drops "
                                     f"{st.get('send_codel_dropped')};")
                        print(f"run {r} {direction:4} {mode:7} {flow:12}: {res['received_mbps']:6.2f} Mbit/s "
                              f"received, {res['retransmits']} retransmits;{extra} {staller.count} stalls; "
                              f"emulator behind {behind_s(start, status) - induced:.2f} s beyond them; "
                              f"load {' '.join(load())}", flush=True)
                    finally:
                        lab_down(name)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="+", choices=["latency", "blackout", "veth", "radio", "stall"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pings", type=int, default=50, help="pings per phase (0.2 s apart)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--only", action="append", help="run only the sets whose label starts so (repeatable)")
    p.add_argument("--flow", action="append",
                   help="radio and stall: run only this comparison (bond, 'p1 alone', 'p2 alone', "
                        "'kernel MPTCP', 'p1 plain', ...; repeatable)")
    p.add_argument("--plain", action="store_true",
                   help="radio: also one TCP flow on each path alone without the tunnel")
    p.add_argument("--stall-ms", type=int, default=300, help="stall: how long each stall lasts (default 300)")
    p.add_argument("--reverse", action="store_true",
                   help="latency and blackout: download (iperf3 -R), the server's session sends")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("tunnel-lab.py: needs root (network namespaces, TUN)")
    if not os.access(BRAID, os.X_OK):
        sys.exit(f"tunnel-lab.py: no {BRAID}; run cargo build --release -p braid first")
    if shutil.which("iperf3") is None:
        sys.exit("tunnel-lab.py: iperf3 is not installed (apt-get install iperf3)")
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {BRAID}, "
              f"commit {run(['git', 'rev-parse', '--short', 'HEAD'], check=False).stdout.strip()}", flush=True)
        for what in args.what:
            {"latency": latency, "blackout": blackout, "veth": veth, "radio": radio, "stall": stall}[what](args)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
