#!/usr/bin/env python3
"""Two clocks that disagree and drift (issue 6, section 3): every scheduler
with the receiver's clock 100 ppm fast and slow against the same run on one
clock, lawrr with the fixed line at 40 % load, and 1-s clock steps. Prints the
tables of BENCHMARKS.md's last section. Usage:

    cargo build --release -p braid
    python3 scripts/clock.py [--commands] [drift|lawrr|steps...]   # DURATION=600s
    BRAID=/path/to/braid python3 scripts/clock.py ...          # target/release/braid by default
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reproduce import SCHEDULERS, bench, mbit, pct, table, wrr_weights  # noqa: E402

DURATION = os.environ.get("DURATION", "600s")
PAIR = ["20mbit,10ms", "10mbit,30ms,jitter=3ms"]
DSL_LTE = ["64mbit,6500us,name=dsl", "60mbit,17ms,jitter=5ms,name=lte"]
LAWRR = "lawrr:k=0.5,t_dwd=250ms"


def clock_args(skew=0, step=None):
    args = ["--clock-skew", str(skew)]
    return args + (["--clock-step", step] if step else [])


def figures(r):
    return {
        "util": r["utilization"],
        "loss": r["loss_rate"],
        "in_order": r["in_order_goodput_bps"] / r["goodput_bps"] if r["goodput_bps"] else 0.0,
        "p99": r["reorder_delay_ms"]["p99"],
    }


def close(a, b, ms=False):
    """Within 2 % (relative), or 2 ms for delays."""
    return abs(a - b) <= 0.02 * abs(b) or (ms and abs(a - b) <= 2.0)


def within(f, base):
    return all(close(f[k], base[k]) for k in ("util", "loss", "in_order")) and close(f["p99"], base["p99"], ms=True)


def drift():
    print(f"### Every scheduler, receiver clock 0 / +100 / -100 ppm ({' + '.join(PAIR)}, CBR 80 %, {DURATION})\n")
    rows = []
    for s in SCHEDULERS:
        sched = wrr_weights([20, 10]) if s == "wrr" else s
        base = None
        for skew in [0, 100, -100]:
            f = figures(bench(PAIR, sched, "cbr:80%", DURATION, extra=clock_args(skew)))
            base = base or f
            verdict = "-" if skew == 0 else ("yes" if within(f, base) else "**no**")
            rows.append([s, f"{skew:+d}" if skew else "0", pct(f["util"], 2), pct(f["loss"], 3),
                         pct(f["in_order"], 2), f"{f['p99']:.1f}", verdict])
    table(["scheduler", "skew ppm", "utilization", "loss", "in-order", "reorder p99 ms", "within 2 % / 2 ms"], rows)


def lawrr():
    print(f"### lawrr ({LAWRR}), DSL + LTE, fixed line at 40 % load (CBR 25.6 Mbit/s), {DURATION}\n")
    rows = []
    half = f"{float(DURATION.rstrip('s')) / 2:g}s"
    for label, args in [("0 ppm", clock_args()), ("+100 ppm", clock_args(100)), ("-100 ppm", clock_args(-100)),
                        (f"+100 ppm, step +1 s at {half}", clock_args(100, f"{half}+1s")),
                        (f"+100 ppm, step -1 s at {half}", clock_args(100, f"{half}+-1s"))]:
        r = bench(DSL_LTE, LAWRR, "cbr:25.6mbit", DURATION, extra=args)
        dsl, lte = r["paths"]
        rows.append([label, str(lte["sent_bytes"]), pct(dsl["loss_rate"], 3), mbit(r["goodput_bps"]),
                     pct(r["loss_rate"], 3)])
    table(["receiver clock", "bytes sent on LTE", "fixed-line loss", "goodput", "app loss"], rows)


def recovery_ms(bins, step_bin, bin_ms, horizon_s=5, before_s=10):
    """Time from the step to the end of the last 100-ms bin, within
    `horizon_s` after it, whose in-order goodput is more than 10 % off the
    mean of the `before_s` before it (a stall, or the burst that ends one)."""
    n_before, n_after = int(before_s * 1e3 / bin_ms), int(horizon_s * 1e3 / bin_ms)
    pre = sum(bins[step_bin - n_before:step_bin]) / n_before
    last = None
    for i in range(step_bin, min(len(bins), step_bin + n_after)):
        if abs(bins[i] - pre) > 0.1 * pre:
            last = i
    return 0 if last is None else (last + 1 - step_bin) * bin_ms


def steps():
    dur, at = "120s", 60
    print(f"### A 1-s clock step at {at} s ({' + '.join(PAIR)}, CBR 80 %, {dur})\n")
    rows = []
    for s in SCHEDULERS:
        sched = wrr_weights([20, 10]) if s == "wrr" else s
        base = bench(PAIR, sched, "cbr:80%", dur)
        bin_ms = base["series"]["bin_s"] * 1e3
        step_bin = int(at * 1e3 / bin_ms)
        noise = recovery_ms(base["series"]["in_order_goodput_bps"], step_bin, bin_ms)
        for by in ["+1s", "-1s"]:
            r = bench(PAIR, sched, "cbr:80%", dur, extra=clock_args(0, f"{at}s+{by.lstrip('+')}"))
            back = recovery_ms(r["series"]["in_order_goodput_bps"], step_bin, bin_ms)
            f, fb = figures(r), figures(base)
            rows.append([s, by, f"{back:.0f}", f"{noise:.0f}", pct(f["util"], 2), pct(fb["util"], 2), f"{f['p99']:.1f}",
                         f"{fb['p99']:.1f}", "yes" if within(f, fb) else "**no**"])
    table(["scheduler", "step", "in-order goodput back within ms", "without step", "utilization", "without step",
           "reorder p99 ms", "without step", "within 2 % / 2 ms"], rows)


SECTIONS = {"drift": drift, "lawrr": lawrr, "steps": steps}

if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__, end="")
        sys.exit(0)
    for name in [a for a in sys.argv[1:] if not a.startswith("--")] or list(SECTIONS):
        SECTIONS[name]()
