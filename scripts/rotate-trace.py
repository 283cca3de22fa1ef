#!/usr/bin/env python3
"""A mahimahi trace (one line per 1500-byte delivery opportunity, in ms)
rotated to start at an offset, so that a simulator run or a fresh lab meets
a chosen stretch of it at once; or a constant-rate trace of the same form.

    scripts/rotate-trace.py traces/TMobile-LTE-short.up 115.3 > /tmp/tr/up
    scripts/rotate-trace.py --constant 120 140 > /tmp/tr/flat   # 120 Mbit/s, 140 s

The rotated trace keeps the original's period and its opportunities.
"""
import argparse
import sys


def rotate(path, offset_s):
    ops = [int(line) for line in open(path) if line.strip()]
    if not ops:
        sys.exit(f"{path}: no opportunities")
    period = ops[-1]
    off = round(offset_s * 1000) % period
    # An opportunity at the period's end comes back at its end, not at 0
    # (mahimahi timestamps start at 1).
    return sorted(((o - off) % period) or period for o in ops)


def constant(mbit, seconds):
    per_ms = mbit * 1e6 / 8 / 1500 / 1000
    n = round(seconds * 1000 * per_ms)
    return [1 + int(i / per_ms) for i in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--constant", action="store_true",
                    help="write a constant-rate trace: ARGS are Mbit/s and seconds")
    ap.add_argument("a", help="trace file (or Mbit/s with --constant)")
    ap.add_argument("b", type=float, help="offset in seconds (or length in seconds with --constant)")
    args = ap.parse_args()
    ops = constant(float(args.a), args.b) if args.constant else rotate(args.a, args.b)
    sys.stdout.write("".join(f"{o}\n" for o in ops))


if __name__ == "__main__":
    main()
