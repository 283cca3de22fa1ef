#!/usr/bin/env bash
# The grid of scripts/grid.sh (bandwidth ratios x one-way delays, 20 Mbit/s in
# all) with closed-loop TCP traffic: one bulk CUBIC flow alone, then the same
# flow with a 64 kbit/s UDP flow beside it.
# Targets (issue 7 item 4): TCP goodput >= 0.92 of the ideal; the small
# flow's one-way delay p99 <= the fastest path's delay + 20 ms.
# BRAID: the binary (target/release/braid); DURATION: each run's length
# (30s); TCP: the bulk flow (tcp:cubic); EXTRA: further bench flags for
# every run (say, EXTRA=--resend-losses).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
B=${BRAID:-target/release/braid}
D=${DURATION:-30s}
TCP=${TCP:-tcp:cubic}
# Further bench flags for every run (say, EXTRA=--resend-losses).
read -r -a EXTRA <<<"${EXTRA:-}"
echo "| ratio | one-way delays | $TCP utilization | TCP RTT p50 / p99 (ms) | with cbr:64kbit: TCP utilization | small flow one-way p50 / p99 (ms) | bound (ms) |"
echo "|---|---|---|---|---|---|---|"
points=$("$(dirname "$0")/grid-points.sh")
# fd 3: the bench commands inside must not read the point list.
while read -r ratio ra da rb db <&3; do
  p1="${ra}mbit,${da}ms"; p2="${rb}mbit,${db}ms"
  read -r u rtt <<<"$($B bench --path "$p1" --path "$p2" --traffic "$TCP" --duration $D "${EXTRA[@]}" --json | python3 -c "
import json,sys; t=json.load(sys.stdin)['flows'][0]['tcp']
print(f\"{t['utilization']:.3f} {t['rtt_ms']['p50']:.0f}/{t['rtt_ms']['p99']:.0f}\")")"
  read -r um owd <<<"$($B bench --path "$p1" --path "$p2" --traffic "$TCP" --traffic cbr:64kbit --duration $D "${EXTRA[@]}" --json | python3 -c "
import json,sys; f=json.load(sys.stdin)['flows']
print(f\"{f[0]['tcp']['utilization']:.3f} {f[1]['one_way_delay_ms']['p50']:.1f}/{f[1]['one_way_delay_ms']['p99']:.1f}\")")"
  bound=$(( (da<db ? da : db) + 20 ))
  p99=${owd#*/}
  umiss=$(python3 -c "print(' ✗' if not $u >= 0.92 else '')")
  miss=$(python3 -c "print(' ✗' if not $p99 <= $bound else '')")
  printf "| %s | %s | %s%s | %s | %s | %s%s | %s |\n" "$ratio" "${da}/${db}ms" "$u" "$umiss" "$rtt" "$um" "$owd" "$miss" "$bound"
done 3<<<"$points"
