#!/usr/bin/env bash
# Bad input at the server (issue 9): one iperf3 CUBIC upload through the
# tunnel in `braid lab`, alone and while a flood of packets that do not
# authenticate hits the server's UDP port at RATE packets per second (sent
# from inside the server's namespace to its listen address: the flood costs
# the server its receive path and its checks, not the emulated links).
# Needs root, iperf3, a release build (cargo build --release -p braid
# --bin braid --example flood). Prints one row per run.
# BRAID (target/release/braid), FLOOD (target/release/examples/flood),
# RATE (100000), SECS (10: each upload's seconds), RUNS (3 per kind),
# KINDS (which of none random transport initiation replay to run; all).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
command -v iperf3 >/dev/null || { echo "flood.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
B=${BRAID:-target/release/braid}
F=${FLOOD:-target/release/examples/flood}
RATE=${RATE:-100000}
SECS=${SECS:-10}
RUNS=${RUNS:-3}
# KINDS: which of none random transport initiation replay to run (all)
NAME=flood$$
PATHS=(--path 20mbit,5ms --path 20mbit,10ms)
trap '$B lab down --name $NAME >/dev/null 2>&1 || true' EXIT
$B lab up --tunnel --name $NAME "${PATHS[@]}" >/dev/null
status=$($B lab status --name $NAME --json)
listen=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tunnel"]["listen"])' "$status")
server_socket=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tunnel"]["server_socket"])' "$status")
server_key=$(sed -n 's/^private_key = "\(.*\)"$/\1/p' "$(dirname "$server_socket")/server.toml" | $B pubkey)
upload() {
  $B lab exec --name $NAME server -- iperf3 -s -1 -B 10.77.0.1 >/dev/null 2>&1 &
  sleep 0.3
  $B lab exec --name $NAME client -- iperf3 -c 10.77.0.1 -C cubic -t "$SECS" -J |
    python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))'
  wait
}
drops() {
  $B status --json --socket "$server_socket" | python3 -c 'import json,sys; d=json.load(sys.stdin)["drops"]; print(" ".join("%s=%s" % (k, v) for k, v in sorted(d.items()) if v))'
}
echo "| flood | run | goodput (Mbit/s) | flood sent (per second) | server drops so far |"
echo "|---|---|---|---|---|"
upload >/dev/null # warm the tunnel: the first run on a fresh tunnel is weak
for kind in ${KINDS:-none random transport initiation replay}; do
  for run in $(seq "$RUNS"); do
    if [ "$kind" = none ]; then
      mbit=$(upload)
      rate="-"
    else
      out=$(mktemp)
      $B lab exec --name $NAME server -- "$F" "$listen" "$RATE" "$((SECS + 1))" "$kind" "$server_key" >"$out" &
      flooder=$!
      mbit=$(upload)
      wait $flooder
      rate=$(sed -n 's/.*(\([0-9]*\) per second).*/\1/p' "$out")
      rm -f "$out"
    fi
    echo "| $kind | $run | $mbit | $rate | $(drops) |"
  done
done
