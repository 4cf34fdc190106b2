#!/bin/sh
# controller-says.sh TYPE/NAME [-n NAMESPACE]
# What the cluster says about an object stuck Terminating, and about the
# objects that hold it: every condition, status field and event the report
# quotes, one per line, from its facts (the evidence as data): the object,
# the field, its value, the reason, then the words. Names and words are
# printed as JSON strings: cluster text is escaped, never sent raw to a
# terminal. Exit as `why` does: 0 nothing stuck, 2 stuck, 1 failure.
set -u
report=$(kubectl terminating why "$@" -o json)
status=$?
case $status in 0 | 2) ;; *) exit "$status" ;; esac
printf '%s\n' "$report" | jq -r '
  [.items[] | recurse(.causes[]?.blockedBy[]?) | .object as $item
   | .causes[]?.facts[]? | select(.quote) | (.object // $item) as $o
   | [($o.kind + "/" + $o.name | @json), .field, .value // "-", .reason // "-", (.quote | @json)]]
  | unique[] | join("  ")'
exit "$status"
