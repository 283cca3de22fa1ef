#!/usr/bin/env bash
# One CUBIC flow through braid's tunnel in the lab, three 10-s iperf3 runs
# per set on one tunnel (the first meets a cold tunnel). Root; the lab is
# called tp and removed at the end, also on failure.
#   scripts/tunnel-tput.sh                      # the four sets of issue 9
#   scripts/tunnel-tput.sh "10mbit,10ms,loss=1% 10mbit,20ms"
#   BRAID=/path/to/braid scripts/tunnel-tput.sh ...   # target/release/braid by default
#   NO_RESEND=1 scripts/tunnel-tput.sh ...      # [tunnel] resend_losses = false
#   IDLE=120 scripts/tunnel-tput.sh ...         # 120 s of idle tunnel before runs 2 and 3
#   ECN=1 scripts/tunnel-tput.sh ...            # the inner TCP asks for ECN (client's net.ipv4.tcp_ecn=1)
#   REVERSE=1 scripts/tunnel-tput.sh ...        # downloads (iperf3 -R): the server's session sends
#   DURATION=30 scripts/tunnel-tput.sh ...      # 30-s runs instead of 10-s ones
#   PINGS=30 scripts/tunnel-tput.sh ...         # 30 pings (50 ms apart) before runs 2 and 3: light traffic between transfers
# Prints per run: sender Mbit/s (receiver Mbit/s), TCP retransmissions, and
# how long the emulator ran more than 0.5 ms behind its schedule (a stalled
# machine: such a run measures the machine, not braid).
set -u
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
command -v iperf3 >/dev/null || { echo "tunnel-tput.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
case ${DURATION:-10} in
  ''|*[!0-9]*|0) echo "tunnel-tput.sh: DURATION must be a whole number of seconds, got '${DURATION}'" >&2; exit 2 ;;
esac
case ${PINGS:-1} in
  ''|*[!0-9]*|0) echo "tunnel-tput.sh: PINGS must be a whole positive number, got '${PINGS}'" >&2; exit 2 ;;
esac
B=${BRAID:-target/release/braid}
. "$(dirname "$0")/tput-common.sh"
L=tp
FLAGS=()
[ -n "${NO_RESEND:-}" ] && FLAGS+=(--no-resend)
trap '$B lab down --name $L >/dev/null 2>&1' EXIT
[ $# -eq 0 ] && set -- "${TPUT_SETS[@]}"
for set in "$@"; do
  args=()
  for p in $set; do args+=(--path "$p"); done
  $B lab up --name $L --tunnel "${FLAGS[@]}" "${args[@]}" >/dev/null 2>&1 || { echo "lab up failed for $set"; continue; }
  [ -n "${ECN:-}" ] && $B lab exec --name $L client -- sysctl -qw net.ipv4.tcp_ecn=1
  sleep 1
  echo "${set// / + }$(tput_runs $L 10.77.0.1)"
  $B lab down --name $L >/dev/null 2>&1
done
