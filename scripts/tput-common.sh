# Sourced by tunnel-tput.sh and mptcp-tput.sh: the issue-9 path sets and
# the three iperf3 runs each script makes per set, so that the two measure
# the same thing. Needs $B (the braid binary) set by the caller.

# The four sets of issue 9 (each a space-separated list of path SPECs).
TPUT_SETS=("8mbit,10ms 2mbit,40ms" "10mbit,5ms 10mbit,50ms" "64mbit,6500us 60mbit,12500us" "64mbit,6500us 60mbit,22500us")

# Three CUBIC uploads of DURATION seconds (10 by default) from the client of
# lab $1 to address $2, each command run under the words after them (say,
# `mptcpize run`), IDLE seconds apart (0 by default), with PINGS pings
# (none by default, 50 ms apart) from the client to $2 before runs 2 and 3;
# with REVERSE set, downloads instead (iperf3 -R: the server's end sends,
# with the congestion control the client names);
# prints " | SENDER (RECEIVER) rtx N behind S" per run, S the longest any
# emulated direction ran more than 0.5 ms behind its schedule during the
# run, in seconds (a run whose machine stalled the emulator; "-" with no
# emulated path).

# Each emulated direction's behind_us of lab $1, space-separated.
emulator_behind() {
  "$B" lab status --json --name "$1" 2>/dev/null | python3 -c "
import json,sys
d=json.load(sys.stdin)
print(' '.join(str(p[k]['counters']['behind_us']) for p in d['paths'] for k in ('up','down') if p.get(k)))"
}

tput_runs() {
  local lab=$1 addr=$2 run res t=${DURATION:-10} dir=()
  shift 2
  [ -n "${REVERSE:-}" ] && dir=(-R)
  local before after
  for run in 1 2 3; do
    if [ "$run" -gt 1 ]; then
      sleep "${IDLE:-0}"
      [ -n "${PINGS:-}" ] && "$B" lab exec --name "$lab" client -- ping -q -c "$PINGS" -i 0.05 "$addr" >/dev/null
    fi
    timeout $((t + 10)) "$B" lab exec --name "$lab" server -- "$@" iperf3 -s -1 -B "$addr" >/dev/null 2>&1 &
    sleep 0.5
    before=$(emulator_behind "$lab")
    res=$(timeout $((t + 15)) "$B" lab exec --name "$lab" client -- "$@" iperf3 -c "$addr" "${dir[@]}" -C cubic -t "$t" -J 2>/dev/null | python3 -c "
import json,sys; e=json.load(sys.stdin)['end']
print(f\"{e['sum_sent']['bits_per_second']/1e6:.2f} ({e['sum_received']['bits_per_second']/1e6:.2f}) rtx {e['sum_sent'].get('retransmits')}\")")
    after=$(emulator_behind "$lab")
    wait
    printf ' | %s behind %s' "$res" "$(python3 -c "
import sys
b, a = (list(map(int, v.split())) for v in sys.argv[1:3])
print(f'{max(y - x for x, y in zip(b, a)) / 1e6:.2f} s' if a and len(a) == len(b) else '-')" "$before" "$after")"
  done
}
