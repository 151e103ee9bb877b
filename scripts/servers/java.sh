#!/usr/bin/env bash
# A JDK and Apache Curator's jars, for the test that runs Curator's own lock recipes against latchkey's
# `layout: 'curator'` (packages/latchkey/test/curator-interop.test.ts). No server: `start` installs what is
# missing (Debian's default-jdk-headless and libcurator-recipes-java, which pulls curator-framework,
# curator-client, zookeeper and guava), `status` reports, `stop` has nothing to stop. Idempotent.
set -euo pipefail

JARS=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-nop)

die() { echo "java.sh: $*" >&2; exit 1; }

missing() {
  command -v javac >/dev/null || return 0
  for jar in "${JARS[@]}"; do [ -f "/usr/share/java/$jar.jar" ] || return 0; done
  return 1
}

case "${1:-}" in
  start)
    missing || exit 0
    command -v apt-get >/dev/null || die "javac or Curator's jars are missing and apt-get is not available"
    echo "java.sh: installing default-jdk-headless and libcurator-recipes-java" >&2
    apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
      default-jdk-headless libcurator-recipes-java libslf4j-java >/dev/null || die "apt-get install failed"
    missing && die "installed, but javac or a jar in /usr/share/java is still missing: ${JARS[*]}"
    exit 0
    ;;
  stop) exit 0 ;;
  status)
    if missing; then echo "javac or Curator's jars missing (java.sh start installs them)"; exit 1; fi
    echo "$(javac -version 2>&1); $(dpkg-query -W -f '${Package} ${Version}' libcurator-recipes-java 2>/dev/null || echo curator jars present)"
    ;;
  *) die "usage: $0 start|stop|status" ;;
esac
