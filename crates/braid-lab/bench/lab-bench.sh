#!/usr/bin/env bash
# Benchmarks of `braid lab` (issue 3): emulator accuracy (rate, delay, loss),
# forwarding capacity without shaping, the anchor measurement of Linux
# kernel Multipath TCP over the lab against single-path TCP on each path,
# and `braid send` against kernel MPTCP on the same paths and direction
# (issue 10, section `send`).
# Prints Markdown tables on stdout; the commands it runs go to stderr.
#
# Needs root, iperf3, iputils-ping, mptcpize, python3, and a built braid:
#   cargo build --release -p braid
#   sudo crates/braid-lab/bench/lab-bench.sh > lab-results.md
# Environment: BRAID (binary), TRACES (trace folder), DUR (seconds per run),
# SECTIONS (any of: rate trace delay loss capacity mptcp send; default all),
# LAB (lab name, default bench), RUNS (runs per flow in `send`, default 3),
# SEND_SETS (path sets of `send` by number, default "1 2 3"), SEND_LOG (a
# file each braid run's --json summary is appended to, default none).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
BRAID=${BRAID:-$repo/target/release/braid}
TRACES=${TRACES:-$repo/traces}
DUR=${DUR:-20}
SECTIONS=${SECTIONS:-rate trace delay loss capacity mptcp send}
LAB=${LAB:-bench}
RUNS=${RUNS:-3}
SEND_SETS=${SEND_SETS:-1 2 3}
SEND_LOG=${SEND_LOG:-/dev/null}
SERVER=198.19.0.1

say() { echo "+ $*" >&2; }
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
lab() { "$BRAID" lab "$@"; }
cleanup() { lab down --name "$LAB" >/dev/null 2>&1 || true; }
trap cleanup EXIT
up() {
    cleanup
    say "braid lab up --name $LAB $(printf -- '--path %s ' "$@")"
    local args=()
    for p in "$@"; do args+=(--path "$p"); done
    lab up --name "$LAB" --seed 42 "${args[@]}" >/dev/null
    # One iperf3 server for TCP/UDP; `down` kills it with the namespace.
    lab exec --name "$LAB" server iperf3 -s -D -p 5201
}
cx() { say "client: $*"; lab exec --name "$LAB" client "$@"; }
status_json() { lab status --name "$LAB" --json; }
# counter PATH_INDEX DIRECTION FIELD
counter() {
    status_json | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['paths'][$1]['$2']['counters']['$3'])"
}
# snap PATH_INDEX DIRECTION FIELD: the counter and the emulator's uptime from
# one status answer, so rates do not depend on how fast the shell runs.
snap() {
    status_json | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['paths'][$1]['$2']['counters']['$3'], s['emulator']['uptime_s'])"
}
uptime_s() { status_json | python3 -c "import json,sys; print(json.load(sys.stdin)['emulator']['uptime_s'])"; }
# goodput of an iperf3 -J report on stdin, in Mbit/s
goodput() { python3 -c "import json,sys; print('%.3f' % (json.load(sys.stdin)['end']['sum_received']['bits_per_second']/1e6))"; }
calc() { python3 -c "print($*)"; }
# RTT percentiles (p50 p99 max) of ping output on stdin, in ms
rtt_stats() {
    python3 -c "
import sys
r=sorted(float(l.split('time=')[1].split()[0]) for l in sys.stdin if 'time=' in l)
print('%d %.3f %.3f %.3f' % (len(r), r[len(r)//2], r[min(len(r)-1, int(len(r)*0.99))], r[-1]))"
}

# IP rate in Mbit/s that the emulator forwarded on path 0 upward while
# GENERATOR (a command run in the client) kept the link busy.
measure_rate() {
    cx "$@" >/dev/null 2>&1 &
    local load=$!
    sleep 2
    local b1 t1 b2 t2
    read -r b1 t1 < <(snap 0 up forwarded_bytes)
    sleep "$DUR"
    read -r b2 t2 < <(snap 0 up forwarded_bytes)
    wait "$load"
    calc "'%.3f' % (($b2 - $b1) * 8 / ($t2 - $t1) / 1e6)"
}

# Capacity of direction DIR (up/down) of path INDEX (0-based) over the emulator's
# time window [FROM, TO) seconds: constant rate, or the trace's opportunities.
capacity_mbit() {
    local index=$1 dir=$2 from=$3 to=$4
    status_json | TRACES="$TRACES" SCRIPTS="$repo/scripts" python3 -c "
import json, os, sys
sys.path.insert(0, os.environ['SCRIPTS'])
import mahimahi
p = json.load(sys.stdin)['paths'][$index]['$dir']['settings']
if p['rate_bps']:
    print('%.3f' % (p['rate_bps'] / 1e6)); sys.exit()
ops = mahimahi.read(os.path.join(os.environ['TRACES'], p['trace']))
print('%.3f' % mahimahi.capacity_mbps(ops, $from, $to))"
}

if want rate; then
echo "### Rate (one path, 5 ms; IP rate from the emulator's counters over ${DUR} s)"
echo
echo "UDP offers 1.2 x the rate; TCP is one iperf3 stream (cubic), its goodput taken by iperf3 with the first 2 s omitted."
echo
echo "| configured | UDP: forwarded IP rate | error | TCP: forwarded IP rate | error | TCP goodput | goodput / (rate x 1448/1500) |"
echo "|---|---|---|---|---|---|---|"
for r in 1 10 100 300; do
    up "${r}mbit,5ms"
    mu=$(measure_rate iperf3 -u -c "$SERVER" -b "$((r * 12 / 10))M" -l 1472 -t $((DUR + 3)))
    mt=$(measure_rate iperf3 -c "$SERVER" -t $((DUR + 3)))
    g=$(cx iperf3 -c "$SERVER" -t "$DUR" -O 2 -J | goodput)
    e=$(calc "$r * 1448 / 1500")
    echo "| $r Mbit/s | $mu Mbit/s | $(calc "'%+.2f %%' % (($mu / $r - 1) * 100)") | $mt Mbit/s | $(calc "'%+.2f %%' % (($mt / $r - 1) * 100)") | $g Mbit/s | $(calc "'%+.2f %%' % (($g / $e - 1) * 100)") |"
done
echo

fi

if want trace; then
echo "### Trace replay (TMobile-LTE-short.up on the up direction, 5 ms; UDP offered at 100 Mbit/s)"
echo
echo "| window | trace capacity in the window | forwarded IP rate | error |"
echo "|---|---|---|---|"
(
    cd "$TRACES"
    up "trace=TMobile-LTE-short.up/TMobile-LTE-short.down,5ms"
    cx iperf3 -u -c "$SERVER" -b 100M -l 1472 -t $((DUR + 3)) >/dev/null 2>&1 &
    load=$!
    sleep 2
    read -r b1 t1 < <(snap 0 up forwarded_bytes)
    sleep "$DUR"
    read -r b2 t2 < <(snap 0 up forwarded_bytes)
    wait "$load"
    c=$(capacity_mbit 0 up "$t1" "$t2")
    m=$(calc "'%.3f' % (($b2 - $b1) * 8 / ($t2 - $t1) / 1e6)")
    echo "| $(calc "'%.1f-%.1f s' % ($t1, $t2)") | $c Mbit/s | $m Mbit/s | $(calc "'%+.2f %%' % (($m / $c - 1) * 100)") |"
)
echo
fi

if want delay; then
echo "### Delay (ping RTT minus 2 x configured one-way delay)"
echo
echo "| configured one-way | load on other paths | pings | RTT p50 | RTT p99 | RTT max | p99 error |"
echo "|---|---|---|---|---|---|---|"
for d in 1 10 40; do
    up "100mbit,${d}ms"
    read -r n p50 p99 max < <(cx ping -n -c 1000 -i 0.005 "$SERVER" | rtt_stats)
    echo "| $d ms | none | $n | $p50 ms | $p99 ms | $max ms | $(calc "'%+.3f ms' % ($p99 - 2 * $d)") |"
done
# 300 Mbit/s or more of TCP (two streams on each of two 200 Mbit/s paths)
# while ping measures a third path.
up "200mbit,10ms" "200mbit,10ms" "100mbit,10ms"
lab exec --name "$LAB" server iperf3 -s -D -p 5202
cx iperf3 -c "$SERVER" -B 198.18.1.2 -P 2 -t 14 >/dev/null &
l1=$!
cx iperf3 -c "$SERVER" -p 5202 -B 198.18.2.2 -P 2 -t 14 >/dev/null &
l2=$!
sleep 2
read -r fw1 t1 < <(snap 0 up forwarded_bytes); read -r fw2 _ < <(snap 1 up forwarded_bytes)
read -r n p50 p99 max < <(cx ping -n -c 1500 -i 0.005 -I p3 "$SERVER" | rtt_stats)
read -r fw1b t2 < <(snap 0 up forwarded_bytes); read -r fw2b _ < <(snap 1 up forwarded_bytes)
late=$(status_json | python3 -c "
import json,sys
c=[p[d]['counters'] for p in json.load(sys.stdin)['paths'] for d in ('up','down')]
print('%d of %d' % (sum(x['late_over_500us'] for x in c), sum(x['forwarded_packets'] for x in c)))")
wait "$l1" "$l2"
load=$(calc "'%.0f Mbit/s' % (($fw1b - $fw1 + $fw2b - $fw2) * 8 / ($t2 - $t1) / 1e6)")
echo "| 10 ms | $load TCP on p1+p2 | $n | $p50 ms | $p99 ms | $max ms | $(calc "'%+.3f ms' % ($p99 - 20)") |"
echo
echo
echo "Emulator's own lateness during the loaded run (frames sent > 0.5 ms after their due time, all paths and directions): $late."
echo

fi

if want loss; then
echo "### Loss (100 Mbit/s, 1 ms; 5000 pings at 2 ms intervals; per-direction rates from the emulator's counters)"
echo
echo "| configured per direction | up measured | down measured | ping loss | expected 1-(1-p)^2 |"
echo "|---|---|---|---|---|"
for l in 1 5 10 20; do
    up "100mbit,1ms,loss=${l}%"
    out=$(cx ping -n -q -c 5000 -i 0.002 -W 1 "$SERVER" || true)
    recv=$(echo "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
    rates=$(status_json | python3 -c "
import json,sys
p=json.load(sys.stdin)['paths'][0]
f=lambda d: d['counters']['dropped_loss']/(d['counters']['dropped_loss']+d['counters']['forwarded_packets'])*100
print('%.2f %%|%.2f %%' % (f(p['up']), f(p['down'])))")
    echo "| $l % | ${rates%%|*} | ${rates##*|} | $(calc "'%.2f %%' % ((1 - $recv / 5000) * 100)") | $(calc "'%.2f %%' % ((1 - (1 - $l / 100) ** 2) * 100)") |"
done
echo

fi

if want capacity; then
echo "### Forwarding capacity, unshaped (10gbit,0ms path)"
echo
echo "| traffic | goodput | emulator forwarded (IP) | packets/s |"
echo "|---|---|---|---|"
up "10gbit,0ms"
for kind in "TCP 1 stream:-P 1" "TCP 4 streams:-P 4" "UDP 1472 B, offered 2 Gbit/s:-u -b 2G -l 1472"; do
    label=${kind%%:*}
    opts=${kind#*:}
    read -r p1 _ < <(snap 0 up forwarded_packets); read -r b1 t1 < <(snap 0 up forwarded_bytes)
    # shellcheck disable=SC2086
    g=$(cx iperf3 -c "$SERVER" $opts -t 10 -J 2>/dev/null | goodput)
    read -r p2 _ < <(snap 0 up forwarded_packets); read -r b2 t2 < <(snap 0 up forwarded_bytes)
    echo "| $label | $g Mbit/s | $(calc "'%.0f Mbit/s' % (($b2 - $b1) * 8 / ($t2 - $t1) / 1e6)") | $(calc "'%.0f' % (($p2 - $p1) / ($t2 - $t1))") |"
done
echo
fi

mptcp_scenario() {
    local title=$1
    shift
    up "$@"
    # The trace in the last scenario is named relative to TRACES, where
    # `up` runs.
    for ns in client server; do
        lab exec --name "$LAB" "$ns" ip mptcp limits set subflow 8 add_addr_accepted 8
    done
    lab exec --name "$LAB" client ip mptcp endpoint add 198.18.2.2 dev p2 subflow
    lab exec --name "$LAB" server mptcpize run iperf3 -s -D -p 5301
    sleep 0.5
    local u0 u1 g1 g2 gm c1 c2
    # Download (server to client), as a user of a bonded link mostly does.
    u0=$(uptime_s); g1=$(cx iperf3 -c "$SERVER" -B 198.18.1.2 -R -t "$DUR" -O 2 -J | goodput); u1=$(uptime_s)
    c1=$(capacity_mbit 0 down "$u0 + 2" "$u1")
    u0=$(uptime_s); g2=$(cx iperf3 -c "$SERVER" -B 198.18.2.2 -R -t "$DUR" -O 2 -J | goodput); u1=$(uptime_s)
    c2=$(capacity_mbit 1 down "$u0 + 2" "$u1")
    local a0 b0 a1 b1
    a0=$(counter 0 down forwarded_bytes); b0=$(counter 1 down forwarded_bytes)
    u0=$(uptime_s); gm=$(cx mptcpize run iperf3 -c "$SERVER" -p 5301 -R -t "$DUR" -O 2 -J | goodput); u1=$(uptime_s)
    a1=$(counter 0 down forwarded_bytes); b1=$(counter 1 down forwarded_bytes)
    local m1 m2 sum
    m1=$(capacity_mbit 0 down "$u0 + 2" "$u1"); m2=$(capacity_mbit 1 down "$u0 + 2" "$u1")
    sum=$(calc "$m1 + $m2")
    echo "| $title | TCP on p1 | $g1 | $c1 | $(calc "'%.1f %%' % ($g1 / ($c1 + $c2) * 100)") |"
    echo "| | TCP on p2 | $g2 | $c2 | $(calc "'%.1f %%' % ($g2 / ($c1 + $c2) * 100)") |"
    echo "| | MPTCP p1+p2 | $gm | $(calc "'%.3f' % $sum") (sum) | **$(calc "'%.1f %%' % ($gm / $sum * 100)")** |"
    # Cross-check: IP bytes the emulator delivered downward over the whole
    # MPTCP run (including the omitted start) against the capacity.
    echo "| | (emulator: IP delivered downward during the MPTCP run, omitted start included) | p1 $(calc "'%.3f' % (($a1 - $a0) * 8 / ($u1 - $u0) / 1e6)"), p2 $(calc "'%.3f' % (($b1 - $b0) * 8 / ($u1 - $u0) / 1e6)") | | |"
}

if want mptcp; then
echo "### Anchor: Linux kernel MPTCP vs single-path TCP (download, iperf3 -R, ${DUR} s after 2 s omitted)"
echo
echo "Utilization = goodput / sum of both paths' capacities (IP bits) over the same window."
echo
echo "| paths | flow | goodput (Mbit/s) | path capacity (Mbit/s) | utilization |"
echo "|---|---|---|---|---|"
cd "$TRACES"
mptcp_scenario "8mbit,10ms + 2mbit,40ms" "8mbit,10ms" "2mbit,40ms"
mptcp_scenario "10mbit,5ms + 10mbit,50ms" "10mbit,5ms" "10mbit,50ms"
mptcp_scenario "10mbit,20ms + TMobile-LTE-short trace,30ms" "10mbit,20ms" \
    "trace=TMobile-LTE-short.up/TMobile-LTE-short.down,30ms"
fi

# One set of `send`: kernel MPTCP (iperf3 upload, client to server) and
# `braid send` of a file of FILE_MIB MiB, RUNS times each, alternating, on
# one lab. Both count from their start (slow start included): iperf3
# without omitted seconds, braid from its handshake to the file verified.
# Each run's capacity is the sum of the paths' upward capacity over that
# run's own window, so a trace path's varying rate is accounted run by run.
send_scenario() {
    local title=$1 file_mib=$2
    shift 2
    up "$@"
    for ns in client server; do
        lab exec --name "$LAB" "$ns" ip mptcp limits set subflow 8 add_addr_accepted 8
    done
    lab exec --name "$LAB" client ip mptcp endpoint add 198.18.2.2 dev p2 subflow
    lab exec --name "$LAB" server mptcpize run iperf3 -s -D -p 5301
    local work
    work=$(mktemp -d)
    "$BRAID" genkey > "$work/s.key"
    "$BRAID" genkey > "$work/r.key"
    head -c $((file_mib << 20)) /dev/urandom > "$work/f.bin"
    local spub rpub
    spub=$("$BRAID" pubkey < "$work/s.key")
    rpub=$("$BRAID" pubkey < "$work/r.key")
    sleep 0.5
    local run u0 u1 cap g kind
    for run in $(seq 1 "$RUNS"); do
        for kind in mptcp braid; do
            u0=$(uptime_s)
            if [[ $kind == mptcp ]]; then
                g=$(cx mptcpize run iperf3 -c "$SERVER" -p 5301 -t "$DUR" -J | goodput)
            else
                rm -rf "$work/out"
                mkdir "$work/out"
                say "server: braid recv ...; client: braid send $file_mib MiB --via 198.18.1.2 --via 198.18.2.2"
                lab exec --name "$LAB" server "$BRAID" recv --listen "$SERVER:47300" \
                    --out "$work/out" --key "$work/r.key" --peer "$spub" >/dev/null 2>&1 &
                local recv=$!
                sleep 0.3
                g=$(lab exec --name "$LAB" client "$BRAID" send "$work/f.bin" --to "$SERVER:47300" \
                    --via 198.18.1.2 --via 198.18.2.2 --key "$work/s.key" --peer "$rpub" --json |
                    tee -a "$SEND_LOG" |
                    python3 -c "import json,sys; s=json.load(sys.stdin); assert s['ok'], s; print('%.3f' % s['goodput_mbit_s'])")
                wait "$recv"
                cmp -s "$work/f.bin" "$work/out/f.bin" || { echo "braid send: file differs" >&2; exit 1; }
            fi
            u1=$(uptime_s)
            cap=$(calc "$(capacity_mbit 0 up "$u0" "$u1") + $(capacity_mbit 1 up "$u0" "$u1")")
            echo "| $title | $kind | $run | $(calc "'%.1f-%.1f s' % ($u0, $u1)") | $g | $(calc "'%.3f' % $cap") | $(calc "'%.1f %%' % ($g / $cap * 100)") |"
        done
    done
    rm -rf "$work"
}

if want send; then
echo "### braid send vs Linux kernel MPTCP (upload, client to server; ${RUNS} runs each, alternating)"
echo
echo "MPTCP: one iperf3 connection (CUBIC), ${DUR} s, no seconds omitted. braid: \`braid send\` of one file of random bytes, goodput = file bytes / (handshake to file verified). Capacity: IP bits of both paths' up direction over the run's window (uptime of the emulator)."
echo
echo "| paths | flow | run | window | goodput (Mbit/s) | capacity (Mbit/s) | of capacity |"
echo "|---|---|---|---|---|---|---|"
cd "$TRACES"
for set in $SEND_SETS; do
    case $set in
    1) send_scenario "8mbit,10ms + 2mbit,40ms" 16 "8mbit,10ms" "2mbit,40ms" ;;
    2) send_scenario "10mbit,5ms + 10mbit,50ms" 32 "10mbit,5ms" "10mbit,50ms" ;;
    3) send_scenario "10mbit,20ms + TMobile-LTE-short trace,30ms" 48 "10mbit,20ms" \
        "trace=TMobile-LTE-short.up/TMobile-LTE-short.down,30ms" ;;
    *) echo "SEND_SETS: unknown set $set" >&2; exit 2 ;;
    esac
done
fi
