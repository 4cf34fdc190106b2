#!/bin/sh
# nightly-report.sh [AGE] [OUT]
# Everything stuck Terminating for longer than AGE (default 1h), cluster-wide:
# a table on stdout for the mail, the full report as JSON in OUT for the
# archive. Exit 0 when nothing is stuck, 2 when something is, 1 on failure.
set -u
age=${1:-1h}
out=${2:-stuck-$(date +%Y-%m-%d).json}

kubectl terminating why -A --stuck-only --older-than "$age" -o json >"$out"
status=$?
case $status in
0) echo "nothing stuck Terminating for more than $age" ;;
2) kubectl terminating list -A --stuck-only --older-than "$age" --no-color ;;
*) exit "$status" ;;
esac
exit "$status"
