#!/usr/bin/env bash
# The main job on the embedded default backend (no server needed): installs what it needs, builds, runs the demo.
# With --payments (paid orders: sagas, a payment service, the outbox to a notifier over RabbitMQ) it first makes
# sure a RabbitMQ broker answers on 127.0.0.1:5672: scripts/servers/rabbitmq.sh starts one only when none does.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. scripts/lib/deps.sh
check_node
ensure_deps
ensure_build
for arg in "$@"; do
  if [ "$arg" = --payments ] && [ -z "${FLASH_SALE_RABBITMQ:-}" ] && [ -z "${LATCHKEY_RABBITMQ_URL:-}" ]; then
    bash scripts/servers/rabbitmq.sh start
  fi
done
exec node --import tsx apps/flash-sale/src/cli.ts demo "$@"
