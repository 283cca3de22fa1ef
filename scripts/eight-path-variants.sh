#!/usr/bin/env bash
# One CUBIC flow over issue 7's 8-path set and three variants of it (every
# path's one-way delay plus 1, 2, 3 ms), 60 s each. One run of this set is
# chaotic: a change anywhere in the sender moves its figure by tenths, so
# compare the mean of the four. Usage: scripts/eight-path-variants.sh [bench flags...]
# (say, --resend-losses). Prints each variant's TCP utilization and the mean.
# BRAID: the binary (target/release/braid); DURATION: each run's length (60s).
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
B=${BRAID:-target/release/braid}
D=${DURATION:-60s}
values=()
for shift_ms in 0 1 2 3; do
  args=()
  for p in 50:150 20:40 10:20 5:5 20:60 10:80 5:30 2:10; do
    args+=(--path "${p%%:*}mbit,$((${p##*:} + shift_ms))ms")
  done
  values+=("$($B bench "${args[@]}" --traffic tcp:cubic --duration "$D" "$@" --json |
    python3 -c "import json,sys; print(f\"{json.load(sys.stdin)['flows'][0]['tcp']['utilization']:.3f}\")")")
done
python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print(' '.join(sys.argv[1:]), 'mean', f'{sum(v)/len(v):.3f}')" "${values[@]}"
