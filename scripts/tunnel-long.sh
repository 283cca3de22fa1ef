#!/usr/bin/env bash
# Paths falsely marked down: a fresh tunnel in the lab, 20 pings 0.2 s apart
# through it, one 10-s CUBIC upload, 3 s idle; prints the pings' summary,
# the upload's receiver rate and how many times each end logged a path
# down (none of the paths is ever cut). Root; the lab is called sat and
# removed at the end, also on failure.
#   scripts/tunnel-long.sh "10mbit,300ms 10mbit,20ms"   # a satellite hop beside a short path
#   BRAID=/path/to/braid scripts/tunnel-long.sh ...      # target/release/braid by default
set -u
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
command -v iperf3 >/dev/null || { echo "tunnel-long.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
[ $# -eq 1 ] || { echo "usage: tunnel-long.sh \"PATH PATH ...\"" >&2; exit 2; }
B=${BRAID:-target/release/braid}
L=sat
trap '$B lab down --name $L >/dev/null 2>&1' EXIT
args=()
for p in $1; do args+=(--path "$p"); done
$B lab up --name $L --tunnel "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $1" >&2; exit 1; }
sleep 3
$B lab exec --name $L client -- ping -q -c 20 -i 0.2 10.77.0.1 | tail -1
timeout 30 $B lab exec --name $L server -- iperf3 -s -1 -B 10.77.0.1 >/dev/null 2>&1 &
sleep 0.5
timeout 30 $B lab exec --name $L client -- iperf3 -c 10.77.0.1 -C cubic -t 10 | grep receiver
wait
sleep 3
logs=/run/braid-lab/$L.tunnel
echo "path downs logged: client $(grep -c 'path down' $logs/client.log), server $(grep -c 'path down' $logs/server.log)"
