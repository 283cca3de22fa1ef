#!/usr/bin/env bash
# The grid of scripts/grid-tcp.sh (bandwidth ratios x one-way delays, 20
# Mbit/s in all), with light traffic first: a UDP flow of LIGHT (1 Mbit/s)
# from the start, and one bulk CUBIC flow from START (3 s) on, for
# DURATION (33 s) in all. A tunnel carries some traffic most of the time;
# this is how fast a transfer that begins then gets the bond.
# Columns: the TCP flow's goodput over its own time / the ideal for its MSS,
# its goodput in its first second (in-order goodput of the bond, Mbit/s),
# and its retransmissions.
# BRAID: the binary (target/release/braid); TCP: the bulk source (tcp:cubic;
# say, tcp:cubic+hystart); EXTRA: further bench flags for every run (say,
# EXTRA=--resend-losses).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
B=${BRAID:-target/release/braid}
LIGHT=${LIGHT:-1mbit}
START=${START:-3}
DURATION=${DURATION:-33}
# The bulk source (say, TCP=tcp:cubic+hystart for Linux's HyStart).
TCP=${TCP:-tcp:cubic}
# Further bench flags for every run (say, EXTRA=--resend-losses).
read -r -a EXTRA <<<"${EXTRA:-}"
echo "| ratio | one-way delays | ${TCP}@${START}s utilization | first second (Mbit/s) | TCP retransmissions |"
echo "|---|---|---|---|---|"
points=$("$(dirname "$0")/grid-points.sh")
# fd 3: the bench commands inside must not read the point list.
while read -r ratio ra da rb db <&3; do
  row=$($B bench --path "${ra}mbit,${da}ms" --path "${rb}mbit,${db}ms" \
      --traffic "${TCP}@${START}s" --traffic "cbr:$LIGHT" --duration "${DURATION}s" \
      "${EXTRA[@]}" --json | python3 -c "
import json, sys
d = json.load(sys.stdin); t = d['flows'][0]['tcp']; s = d['series']
first = s['in_order_goodput_bps'][round($START / s['bin_s']):][:round(1 / s['bin_s'])]
print(f\"{t['utilization']:.3f} | {sum(first) / len(first) / 1e6:.1f} | {t['counters']['retransmissions']}\")")
  echo "| $ratio | $da/${db}ms | $row |"
done 3<<<"$points"
