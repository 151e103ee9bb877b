#!/usr/bin/env bash
# Starts (or stops, or reports) every server the tests need, one script per server in scripts/servers/.
# Usage: scripts/servers.sh start|stop|status
set -euo pipefail
cmd="${1:-start}"
here="$(cd "$(dirname "$0")" && pwd)"
shopt -s nullglob
failed=0
for script in "$here"/servers/*.sh; do
  name=$(basename "$script" .sh)
  if ! bash "$script" "$cmd"; then
    echo "servers: $name $cmd failed" >&2
    failed=1
  fi
done
exit "$failed"
