#!/usr/bin/env bash
# Installs what the lab needs beyond the test servers: libfaketime (for the clock scenarios T15-T17), and
# FUSE with Python's fusepy for lab/lazyfs/lazy_fs.py (T13, power loss).
# redis-server, ZooKeeper and etcd come with scripts/servers/*.sh. Idempotent.
set -euo pipefail
if ! command -v faketime >/dev/null; then
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends faketime >/dev/null
fi
if ! /usr/bin/python3 -c 'import fusepy' 2>/dev/null || ! command -v fusermount3 >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends python3-fusepy fuse3 >/dev/null
fi
faketime --version 2>/dev/null | head -1 || echo "faketime installed"
