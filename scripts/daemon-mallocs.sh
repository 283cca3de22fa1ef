#!/bin/bash
# Heap allocations per packet in the tunnel daemons under load: while
# `tunnel-lab.py veth` runs one CUBIC flow through the tunnel on plain veth
# paths, counts the calls to libc's malloc in the client and the server
# daemon for 4 s (a perf uprobe) and the inner packets the client read from
# its TUN device in the same 4 s (`braid status`).
#
#   sudo scripts/daemon-mallocs.sh            # target/release/braid
#   sudo BRAID=/path/to/braid scripts/daemon-mallocs.sh
#   sudo LAB_PREFIX=x scripts/daemon-mallocs.sh   # the lab is x-veth (tl-veth by default)
#
# Needs root and perf with uprobes (linux-perf). Leaves the uprobe
# `probe_libc:malloc` defined (`perf probe -d probe_libc:malloc` removes it).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BRAID=${BRAID:-$ROOT/target/release/braid}
LAB=${LAB_PREFIX:-tl}-veth
LIBC=$(ldd "$BRAID" | awk '/libc.so.6/ {print $3}')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

perf probe -l 2>/dev/null | grep -q "probe_libc:malloc" || perf probe -q -x "$LIBC" malloc

BRAID=$BRAID "$ROOT/scripts/tunnel-lab.py" veth --runs 1 >"$WORK/veth.log" 2>&1 &
LAB_PID=$!
# The raw veth run comes first; the tunnel run starts right after it.
for _ in $(seq 1 120); do
    grep -q "raw veth run" "$WORK/veth.log" && break
    sleep 0.5
done
sleep 2
client=$(pgrep -f "client --config /run/braid-lab/$LAB" | head -1)
server=$(pgrep -f "server --config /run/braid-lab/$LAB" | head -1)
packets() {
    "$BRAID" status --json --socket "/run/braid-lab/$LAB.tunnel/client.sock" |
        python3 -c "import json, sys; print(json.load(sys.stdin)['daemon']['tun_rx_packets'])"
}
before=$(packets)
perf stat -x, -e probe_libc:malloc -p "$client" -- sleep 4 2>"$WORK/client" &
client_perf=$!
perf stat -x, -e probe_libc:malloc -p "$server" -- sleep 4 2>"$WORK/server"
wait "$client_perf"
after=$(packets)
wait "$LAB_PID"
n=$((after - before))
c=$(cut -d, -f1 "$WORK/client")
s=$(cut -d, -f1 "$WORK/server")
echo "$BRAID: $n packets in 4 s; client $c mallocs ($(python3 -c "print(f'{$c / $n:.3f}')") per packet), server $s ($(python3 -c "print(f'{$s / $n:.3f}')") per packet)"
grep "tunnel run" "$WORK/veth.log"
