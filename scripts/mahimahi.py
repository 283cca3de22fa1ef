#!/usr/bin/env python3
"""Mahimahi capacity traces: one line per 1500-byte delivery opportunity,
in ms from the trace's start; the trace repeats after its last one. Read
by radio-sim.py, rotate-trace.py, tunnel-lab.py and the lab's bench
script, so that each counts a trace's capacity the same way.

    scripts/mahimahi.py capacity traces/TMobile-LTE-short.up 10 40   # Mbit/s over [10, 40) s
"""
import argparse
import sys

OPPORTUNITY_BYTES = 1500


def read(path):
    """The trace's opportunities, ms; exits with a message if it has none."""
    ops = [int(line) for line in open(path) if line.strip()]
    if not ops:
        sys.exit(f"{path}: no opportunities")
    return ops


def rotate(ops, offset_s):
    """The trace started `offset_s` seconds in, with its period kept."""
    period = ops[-1]
    off = round(offset_s * 1000) % period
    # An opportunity at the period's end comes back at its end, not at 0
    # (mahimahi timestamps start at 1).
    return sorted(((o - off) % period) or period for o in ops)


def constant(mbit, seconds):
    """A constant-rate trace of `mbit` Mbit/s lasting `seconds`."""
    per_ms = mbit * 1e6 / 8 / OPPORTUNITY_BYTES / 1000
    n = round(seconds * 1000 * per_ms)
    return [1 + int(i / per_ms) for i in range(n)]


def capacity_mbps(ops, t0, t1):
    """IP capacity in Mbit/s over [t0, t1) seconds from the trace's start,
    the trace repeating after its last opportunity."""
    period = ops[-1]

    def before(ms):
        full, rest = divmod(ms, period)
        return full * len(ops) + sum(1 for o in ops if o < rest)

    a, b = int(t0 * 1000), int(t1 * 1000)
    if b <= a:
        sys.exit(f"empty window [{t0}, {t1}) s")
    return (before(b) - before(a)) * OPPORTUNITY_BYTES * 8 / ((b - a) / 1000) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capacity", help="print a trace's mean capacity (Mbit/s) over [FROM, TO) s")
    cap.add_argument("trace")
    cap.add_argument("start", type=float, metavar="FROM")
    cap.add_argument("end", type=float, metavar="TO")
    args = ap.parse_args()
    print(f"{capacity_mbps(read(args.trace), args.start, args.end):.3f}")


if __name__ == "__main__":
    main()
