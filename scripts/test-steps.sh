# Sourced by scripts/test and scripts/test-served: named steps with their times, and checks
# whose failures are counted (not fatal) and say how to rerun them. State lives in files under
# TEST_STATE_DIR (made on first use), so that both scripts add to one timing table and one
# count, whichever of them runs a step.
# shellcheck shell=bash

if [ -z "${TEST_STATE_DIR:-}" ]; then
  TEST_STATE_DIR="$(mktemp -d)"
  export TEST_STATE_DIR
  # The script that made the state prints the summary (summary_if_mine).
  TEST_STATE_OWNER=$$
  : >"$TEST_STATE_DIR/times"
  : >"$TEST_STATE_DIR/retried"
  echo 0 >"$TEST_STATE_DIR/passed"
  echo 0 >"$TEST_STATE_DIR/failed"
  echo "bootstrap" >"$TEST_STATE_DIR/step"
  date +%s >"$TEST_STATE_DIR/step-start"
  date +%s >"$TEST_STATE_DIR/start"
fi

# step NAME: ends the step before (recording its time) and starts NAME.
step() {
  local now started
  now="$(date +%s)"
  started="$(cat "$TEST_STATE_DIR/step-start")"
  printf '%5d s  %s\n' $((now - started)) "$(cat "$TEST_STATE_DIR/step")" >>"$TEST_STATE_DIR/times"
  echo "$*" >"$TEST_STATE_DIR/step"
  echo "$now" >"$TEST_STATE_DIR/step-start"
  printf '\n=== %s  (%d s since the start)\n' "$*" $((now - $(cat "$TEST_STATE_DIR/start")))
}

count() { echo $(($(cat "$TEST_STATE_DIR/$1") + 1)) >"$TEST_STATE_DIR/$1"; }

# check NAME COMMAND [ARGS...]: a step whose failure is counted; a command (rather than one of
# the caller's functions) prints how to rerun it alone while the services run (scripts/dev
# starts the same), tokens elided.
check() {
  local name="$1"; shift
  step "$name"
  if "$@"; then count passed; else
    count failed; echo "FAILED: $name"
    if ! declare -F "$1" >/dev/null; then
      local words=() word
      for word in "$@"; do [[ "$word" == *TOKEN*=* ]] && word="${word%%=*}=..."; words+=("$word"); done
      echo "  to rerun: ${words[*]}"
    fi
  fi
}

failures() { cat "$TEST_STATE_DIR/failed"; }

# retried_once COMMAND [ARGS...]: a client chain, given one more attempt from scratch; the
# retry is printed and listed in the summary, and a second failure fails the check.
retried_once() {
  "$@" && return 0
  echo "--- first attempt failed (above); once more from scratch: $*"
  echo "$*" >>"$TEST_STATE_DIR/retried"
  "$@"
}

# summary: every step's time, the retried chains and the count; fails when a check failed.
summary() {
  step "done"
  printf '\n=== time per step (%d s in all)\n' $(($(date +%s) - $(cat "$TEST_STATE_DIR/start")))
  cat "$TEST_STATE_DIR/times"
  echo
  if [ -s "$TEST_STATE_DIR/retried" ]; then
    echo "client chains that passed only on their second attempt: $(paste -sd ';' "$TEST_STATE_DIR/retried")"
  fi
  echo "checks: $(cat "$TEST_STATE_DIR/passed") passed, $(failures) failed"
  [ "$(failures)" -eq 0 ]
}

# summary_if_mine: the summary, when this script made the state (it was run alone).
summary_if_mine() { [ "${TEST_STATE_OWNER:-}" != "$$" ] || summary; }
