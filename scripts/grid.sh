#!/usr/bin/env bash
# Target grid for the default scheduler: bandwidth ratios x one-way delays,
# overloaded (110 %) and at 95 % of the ideal goodput.
# BRAID: the binary (target/release/braid); DURATION: each run's length (30s).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
B=${BRAID:-target/release/braid}
D=${DURATION:-30s}
# Output: the Markdown table of BENCHMARKS.md; a miss of a target is marked.
echo "| ratio | one-way delays | utilization at 110 % | loss at 95 % | in-order / goodput at 95 % | reorder p99 at 95 % (ms) | bound (ms) |"
echo "|---|---|---|---|---|---|---|"
points=$("$(dirname "$0")/grid-points.sh")
# fd 3: the bench commands inside must not read the point list.
while read -r ratio ra da rb db <&3; do
  p1="${ra}mbit,${da}ms"; p2="${rb}mbit,${db}ms"
  u=$($B bench --path "$p1" --path "$p2" --traffic cbr:110% --duration $D --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(f\"{r['utilization']:.3f}\")")
  read -r l io rp <<<"$($B bench --path "$p1" --path "$p2" --traffic cbr:95% --duration $D --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(f\"{r['loss_rate']*100:.2f}% {r['in_order_goodput_bps']/max(r['goodput_bps'],1):.3f} {(r['reorder_delay_ms'] or {}).get('p99', float('nan')):.1f}\")")"
  bound=$(( (da>db ? da-db : db-da) + 15 ))
  miss=$(python3 -c "print(' ✗' if not $rp <= $bound else '')")
  printf "| %s | %s | %s | %s | %s | %s%s | %s |\n" "$ratio" "${da}/${db}ms" "$u" "$l" "$io" "$rp" "$miss" "$bound"
done 3<<<"$points"
