#!/usr/bin/env bash
# Side by side: the same path sets with CBR at 95 % of the ideal goodput,
# and with closed-loop TCP (tcp:cubic, tcp:reno, tcp:cubic:4), each with a
# 64 kbit/s UDP flow beside it.
# Columns: utilization (CBR: its datagram goodput / ideal, at most 0.95;
# TCP: TCP goodput / the ideal for its MSS), the bond's application loss,
# TCP RTT p50/p99 and the small flow's one-way delay p50/p99.
# BRAID: the binary (target/release/braid); DURATION: each run's length (30s).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
B=${BRAID:-target/release/braid}
D=${DURATION:-30s}
SETS=(
  "10mbit,5ms 10mbit,5ms"
  "15mbit,5ms 5mbit,50ms"
  "10mbit,20ms 10mbit,60ms"
  "18mbit,5ms 2mbit,100ms"
  "50mbit,150ms 20mbit,40ms 10mbit,20ms 5mbit,5ms 20mbit,60ms 10mbit,80ms 5mbit,30ms 2mbit,10ms"
  "8mbit,10ms 2mbit,40ms"
  "10mbit,5ms 10mbit,50ms"
  "64mbit,6500us 60mbit,12500us"
  "64mbit,6500us 60mbit,22500us"
)
echo "| paths | traffic | utilization | loss | TCP RTT p50 / p99 (ms) | 64 kbit/s flow one-way p50 / p99 (ms) |"
echo "|---|---|---|---|---|---|"
for set in "${SETS[@]}"; do
  args=()
  for p in $set; do args+=(--path "$p"); done
  for t in cbr:95% tcp:cubic tcp:reno tcp:cubic:4; do
    $B bench "${args[@]}" --traffic "$t" --traffic cbr:64kbit --duration "$D" --json | python3 -c "
import json,sys
r=json.load(sys.stdin); f=r['flows']; t=f[0]['tcp']; s=f[1]['one_way_delay_ms']
u = t['utilization'] if t else f[0]['goodput_bps']/r['ideal_goodput_bps']
rtt = f\"{t['rtt_ms']['p50']:.0f} / {t['rtt_ms']['p99']:.0f}\" if t else '-'
print(f\"| {'$set'.replace(' ', ' + ')} | $t | {u:.3f} | {r['loss_rate']*100:.2f}% | {rtt} | {s['p50']:.1f} / {s['p99']:.1f} |\")"
  done
done
