#!/usr/bin/env bash
# One CUBIC flow through braid's tunnel in the lab, three 10-s iperf3 runs
# per set on one tunnel (the first meets a cold tunnel). Root; the lab is
# called tp and removed at the end, also on failure.
#   scripts/tunnel-tput.sh                      # the four sets of issue 9
#   scripts/tunnel-tput.sh "10mbit,10ms,loss=1% 10mbit,20ms"
#   NO_RESEND=1 scripts/tunnel-tput.sh ...      # [tunnel] resend_losses = false
#   IDLE=120 scripts/tunnel-tput.sh ...         # 120 s of idle tunnel before runs 2 and 3
# Prints per run: sender Mbit/s (receiver Mbit/s) and TCP retransmissions.
set -u
command -v iperf3 >/dev/null || { echo "tunnel-tput.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
B=${BRAID:-target/release/braid}
L=tp
FLAGS=()
[ -n "${NO_RESEND:-}" ] && FLAGS+=(--no-resend)
trap '$B lab down --name $L >/dev/null 2>&1' EXIT
if [ $# -eq 0 ]; then
  set -- "8mbit,10ms 2mbit,40ms" "10mbit,5ms 10mbit,50ms" "64mbit,6500us 60mbit,12500us" "64mbit,6500us 60mbit,22500us"
fi
for set in "$@"; do
  args=()
  for p in $set; do args+=(--path "$p"); done
  $B lab up --name $L --tunnel "${FLAGS[@]}" "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $set"; continue; }
  sleep 1
  out=""
  for run in 1 2 3; do
    [ "$run" -gt 1 ] && sleep "${IDLE:-0}"
    timeout 20 $B lab exec --name $L server -- iperf3 -s -1 -B 10.77.0.1 >/dev/null 2>&1 &
    sleep 0.5
    res=$(timeout 25 $B lab exec --name $L client -- iperf3 -c 10.77.0.1 -C cubic -t 10 -J 2>/dev/null | python3 -c "
import json,sys; e=json.load(sys.stdin)['end']
print(f\"{e['sum_sent']['bits_per_second']/1e6:.2f} ({e['sum_received']['bits_per_second']/1e6:.2f}) rtx {e['sum_sent'].get('retransmits')}\")")
    wait
    out="$out | $res"
  done
  echo "${set// / + }$out"
  $B lab down --name $L >/dev/null 2>&1
done
