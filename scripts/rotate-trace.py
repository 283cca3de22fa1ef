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

import mahimahi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--constant", action="store_true",
                    help="write a constant-rate trace: ARGS are Mbit/s and seconds")
    ap.add_argument("a", help="trace file (or Mbit/s with --constant)")
    ap.add_argument("b", type=float, help="offset in seconds (or length in seconds with --constant)")
    args = ap.parse_args()
    if args.constant:
        ops = mahimahi.constant(float(args.a), args.b)
    else:
        ops = mahimahi.rotate(mahimahi.read(args.a), args.b)
    sys.stdout.write("".join(f"{o}\n" for o in ops))


if __name__ == "__main__":
    main()
