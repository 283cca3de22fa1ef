#!/usr/bin/env bash
# The grid of scripts/grid.sh (bandwidth ratios x one-way delays, 20 Mbit/s in
# all) with closed-loop TCP traffic: one bulk CUBIC flow alone, then the same
# flow with a 64 kbit/s UDP flow beside it.
# Targets (issue 7 item 4): TCP goodput >= 0.92 of the ideal; the small
# flow's one-way delay p99 <= the fastest path's delay + 20 ms.
set -euo pipefail
B=${BRAID:-target/release/braid}
D=${DURATION:-30s}
TCP=${TCP:-tcp:cubic}
# Further bench flags for every run (say, EXTRA=--resend-losses).
read -r -a EXTRA <<<"${EXTRA:-}"
echo "| ratio | one-way delays | $TCP utilization | TCP RTT p50 / p99 (ms) | with cbr:64kbit: TCP utilization | small flow one-way p50 / p99 (ms) | bound (ms) |"
echo "|---|---|---|---|---|---|---|"
for ratio in 1:1 3:1 5:1 9:1; do
  a=${ratio%:*}; b=${ratio#*:}; total=20
  ra=$(python3 -c "print($total*$a/($a+$b))"); rb=$(python3 -c "print($total*$b/($a+$b))")
  for delays in 5:5 5:50 5:100 50:5 100:5 20:60 100:100; do
    da=${delays%:*}; db=${delays#*:}
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
  done
done
