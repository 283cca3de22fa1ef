#!/usr/bin/env bash
# The 28 points of issue 2's grid, in the order of BENCHMARKS.md's tables:
# bandwidth ratios 1:1, 3:1, 5:1, 9:1 of 20 Mbit/s in all, times seven
# pairs of one-way delays. One line per point:
#   RATIO RATE1 DELAY1 RATE2 DELAY2      (Mbit/s and ms; 9:1 18.0 5 2.0 50)
# Read by grid.sh, grid-tcp.sh and grid-light.sh.
set -euo pipefail
for a in "$@"; do case $a in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac; done
for ratio in 1:1 3:1 5:1 9:1; do
  a=${ratio%:*}; b=${ratio#*:}; total=20
  ra=$(python3 -c "print($total*$a/($a+$b))"); rb=$(python3 -c "print($total*$b/($a+$b))")
  for delays in 5:5 5:50 5:100 50:5 100:5 20:60 100:100; do
    echo "$ratio $ra ${delays%:*} $rb ${delays#*:}"
  done
done
