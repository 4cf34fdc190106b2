#!/bin/sh
# delete-namespace.sh NAMESPACE [TIMEOUT]
# Delete a namespace and wait for it to go. If it sticks, page with its root
# cause (the command in $PAGE_CMD receives one line; default: stderr) and
# exit 2. The full report is left in $REPORT (default: NAMESPACE-stuck.json).
set -u
ns=$1
timeout=${2:-5m}
report=${REPORT:-$ns-stuck.json}

kubectl delete namespace "$ns" --wait=false || exit 1
kubectl terminating wait "namespace/$ns" --timeout "$timeout" --ignore-not-found -o json >"$report"
status=$?
case $status in
0) rm -f "$report"; echo "namespace $ns deleted" ;;
2)
  cause=$(kubectl terminating why "namespace/$ns" --ignore-not-found \
    -o jsonpath='{.items[0].causes[0].code}: {.items[0].causes[0].summary}')
  message="namespace $ns stuck Terminating after $timeout: $cause (report: $report)"
  if [ -n "${PAGE_CMD:-}" ]; then printf '%s\n' "$message" | $PAGE_CMD; else printf '%s\n' "$message" >&2; fi
  ;;
esac
exit "$status"
