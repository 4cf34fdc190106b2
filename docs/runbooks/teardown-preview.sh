#!/bin/sh
# teardown-preview.sh NAMESPACE [TIMEOUT]
# Tear down a preview environment only if nothing would hold its deletion:
# preflight first; when it forecasts that the namespace would stick, say
# why (the top forecast cause) and delete nothing (exit 2); when it cannot
# tell, delete nothing (exit 1); else delete and wait for the namespace to
# go (exit as `wait` does).
set -u
ns=$1
timeout=${2:-5m}

kubectl terminating preflight "namespace/$ns" -o name >/dev/null
case $? in
0) ;;
2)
  forecast=$(kubectl terminating preflight "namespace/$ns" \
    -o jsonpath='{.items[0].causes[0].code}: {.items[0].causes[0].summary}')
  printf 'namespace %s not deleted: its deletion would stick: %s\n' "$ns" "$forecast" >&2
  exit 2
  ;;
*) printf 'namespace %s not deleted: preflight could not tell\n' "$ns" >&2; exit 1 ;;
esac
kubectl delete namespace "$ns" --wait=false || exit 1
kubectl terminating wait "namespace/$ns" --timeout "$timeout" --ignore-not-found && echo "namespace $ns deleted"
