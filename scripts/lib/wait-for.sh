# Sourced by the server scripts (after they define `die` and TIMEOUT_S).
# `wait_for WHAT LOG CHECK [ARG...]` runs `CHECK ARG...` every 0.2 s until it succeeds; after TIMEOUT_S seconds it
# dies with "WHAT after N s (see LOG)", so every script fails the same way and names the log to read.
wait_for() {
  local what="$1" log="$2" deadline=$((SECONDS + TIMEOUT_S))
  shift 2
  until "$@"; do
    [ $SECONDS -lt $deadline ] || die "$what after ${TIMEOUT_S}s (see $log)"
    sleep 0.2
  done
}
