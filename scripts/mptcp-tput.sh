#!/usr/bin/env bash
# Kernel MPTCP on the same paths and with the same iperf3 runs as
# tunnel-tput.sh (one CUBIC upload, client to server, three 10-s runs per
# set on one lab, the first on fresh namespaces), for a side-by-side with
# braid's tunnel. Root, iperf3 and mptcpize (Debian: mptcpd); the lab is
# called mp and removed at the end, also on failure.
#   scripts/mptcp-tput.sh                       # the four sets of issue 9
#   scripts/mptcp-tput.sh "10mbit,5ms 10mbit,50ms"
#   IDLE=120 scripts/mptcp-tput.sh ...          # 120 s between runs
#   BRAID=/path/to/braid, DURATION=30, REVERSE=1, PINGS=30: as in tunnel-tput.sh
# Prints per run: sender Mbit/s (receiver Mbit/s) and TCP retransmissions.
set -u
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
for tool in iperf3 mptcpize; do
  command -v $tool >/dev/null || { echo "mptcp-tput.sh: $tool is not installed (apt-get install iperf3 mptcpd)" >&2; exit 1; }
done
B=${BRAID:-target/release/braid}
. "$(dirname "$0")/tput-common.sh"
L=mp
trap '$B lab down --name $L >/dev/null 2>&1' EXIT
[ $# -eq 0 ] && set -- "${TPUT_SETS[@]}"
for set in "$@"; do
  args=()
  for p in $set; do args+=(--path "$p"); done
  $B lab up --name $L "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $set"; continue; }
  for ns in client server; do
    $B lab exec --name $L $ns -- ip mptcp limits set subflow 8 add_addr_accepted 8
  done
  # Every path after the first is a subflow endpoint of the client.
  i=0
  for _ in $set; do
    i=$((i + 1))
    [ $i -gt 1 ] && $B lab exec --name $L client -- ip mptcp endpoint add 198.18.$i.2 dev p$i subflow
  done
  sleep 1
  echo "${set// / + }$(tput_runs $L 198.19.0.1 mptcpize run)"
  $B lab down --name $L >/dev/null 2>&1
done
