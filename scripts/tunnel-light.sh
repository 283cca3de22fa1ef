#!/usr/bin/env bash
# Light traffic, then a transfer, through braid's tunnel in the lab (the
# lab's counterpart of scripts/grid-light.sh): 1 Mbit/s of UDP through a
# fresh tunnel from 1.5 s after it is up, and 3 s later one 10-s CUBIC
# upload. Root; the lab is called lt and removed at the end, also on failure.
#   scripts/tunnel-light.sh "10mbit,5ms 10mbit,50ms" ...   # path sets
#   BRAID=/path/to/braid scripts/tunnel-light.sh ...        # target/release/braid by default
# Prints per set: the TCP receiver's first six half-seconds and its 10-s
# mean, Mbit/s.
set -u
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
command -v iperf3 >/dev/null || { echo "tunnel-light.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: tunnel-light.sh \"PATH PATH\" ..." >&2; exit 2; }
B=${BRAID:-target/release/braid}
L=lt
out=$(mktemp)
trap '$B lab down --name $L >/dev/null 2>&1; rm -f "$out"' EXIT
for set in "$@"; do
  args=()
  for p in $set; do args+=(--path "$p"); done
  $B lab up --name $L --tunnel "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $set"; continue; }
  sleep 1
  timeout 30 "$B" lab exec --name $L server -- iperf3 -s -1 -p 5202 -B 10.77.0.1 >/dev/null 2>&1 &
  timeout 30 "$B" lab exec --name $L server -- iperf3 -s -1 -p 5201 -B 10.77.0.1 -J >"$out" 2>/dev/null &
  sleep 0.5
  timeout 30 "$B" lab exec --name $L client -- iperf3 -c 10.77.0.1 -p 5202 -u -b 1M -l 1200 -t 17 >/dev/null 2>&1 &
  sleep 3
  timeout 25 "$B" lab exec --name $L client -- iperf3 -c 10.77.0.1 -p 5201 -C cubic -t 10 -i 0.5 >/dev/null 2>&1
  wait
  echo "${set// / + } | $(python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
iv = [i['sum']['bits_per_second'] / 1e6 for i in j['intervals']]
print(' '.join(f'{x:.1f}' for x in iv[:6]), '| 10 s', round(j['end']['sum_received']['bits_per_second'] / 1e6, 2))" "$out")"
  $B lab down --name $L >/dev/null 2>&1
done
