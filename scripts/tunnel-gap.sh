#!/usr/bin/env bash
# Transfers with light traffic between them, through braid's tunnel in the
# lab: three CUBIC uploads of DURATION seconds (10 by default) on one
# tunnel, each followed by PINGS pings (30 by default, 50 ms apart). The
# second and third meet paths that carried only pings since the last load.
# Root; the lab is called gap and removed at the end, also on failure.
#   scripts/tunnel-gap.sh "20mbit,27500us"
#   scripts/tunnel-gap.sh "10mbit,5ms 10mbit,50ms"
# Prints per run: receiver Mbit/s and TCP retransmissions.
set -u
command -v iperf3 >/dev/null || { echo "tunnel-gap.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
[ $# -eq 1 ] || { echo "usage: scripts/tunnel-gap.sh \"SPEC [SPEC...]\"" >&2; exit 2; }
for v in "${DURATION:-10}" "${PINGS:-30}"; do
  case $v in ''|*[!0-9]*|0) echo "tunnel-gap.sh: DURATION and PINGS must be whole positive numbers" >&2; exit 2 ;; esac
done
B=${BRAID:-target/release/braid}
L=gap
T=${DURATION:-10}
trap '$B lab down --name $L >/dev/null 2>&1' EXIT
args=()
for p in $1; do args+=(--path "$p"); done
$B lab up --name $L --tunnel "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $1" >&2; exit 1; }
sleep 1
printf '%s' "${1// / + }"
for run in 1 2 3; do
  timeout $((T + 10)) "$B" lab exec --name $L server -- iperf3 -s -1 -B 10.77.0.1 >/dev/null 2>&1 &
  sleep 0.5
  res=$(timeout $((T + 15)) "$B" lab exec --name $L client -- iperf3 -c 10.77.0.1 -C cubic -t "$T" -J 2>/dev/null | python3 -c "
import json,sys; e=json.load(sys.stdin)['end']
print(f\"{e['sum_received']['bits_per_second']/1e6:.2f} rtx {e['sum_sent'].get('retransmits')}\")")
  wait
  printf ' | %s' "$res"
  "$B" lab exec --name $L client -- ping -q -c "${PINGS:-30}" -i 0.05 10.77.0.1 >/dev/null
done
echo
