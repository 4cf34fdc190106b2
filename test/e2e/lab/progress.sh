# Sourced by build.sh and hack/demo.sh: a long step shown as it runs.
#
# step LABEL CMD...: runs CMD with its output appended to $log (shown, its
# end, if CMD fails: then the script exits). On a terminal the line
# "LABEL... 0m12s" is redrawn every second, with what `step_detail` prints
# when it is set (a count of downloads); elsewhere (a pipe, CI) LABEL is
# printed once and the time it took at the end.

# took SECONDS: "4m05s".
took() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

step_detail=
step() {
  local label=$1 start=$SECONDS pid rc=0 detail
  shift
  echo "== $label" >>"$log"
  if [ -t 1 ]; then
    "$@" >>"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      detail=${step_detail:+$($step_detail), }
      printf '\r\033[K%s... %s%s' "$label" "$detail" "$(took $((SECONDS - start)))"
      sleep 1
    done
    wait "$pid" || rc=$?
    detail=${step_detail:+$($step_detail), }
    printf '\r\033[K%s... %s%s' "$label" "$detail" "$(took $((SECONDS - start)))"
  else
    printf '%s... ' "$label"
    "$@" >>"$log" 2>&1 || rc=$?
    detail=${step_detail:+$($step_detail), }
    printf '%s%s' "$detail" "$(took $((SECONDS - start)))"
  fi
  if [ "$rc" != 0 ]; then
    printf ': failed; the end of %s:\n' "$log" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  echo
}

# downloads_since MARKER: how many module archives the Go module cache has
# received since MARKER (a file) was made.
downloads_since() {
  local n
  n=$(find "$(go env GOMODCACHE)/cache/download" -name '*.zip' -newer "$1" 2>/dev/null | wc -l)
  echo "$n modules downloaded"
}
