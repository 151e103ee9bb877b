/**
 * Where each RedLock node keeps a lock's line of waiting processes: beside the lock's key, a sorted set (owner ->
 * ticket) and a hash (owner -> "expiresAtMs ttlMs"), named with a NUL so that no lock name's key is one of them.
 * A release hands the key to the first owner in line (scripts/release.lua), so a release wakes one process.
 */

/** Suffix of the line (sorted set) beside the lock's key. */
const LINE = '\u0000line'
/** Suffix of the line's expiries and lease lengths (hash). */
const LINE_TTL = '\u0000line-ttl'

/** KEYS of the scripts that touch a lock and its line: the key, the line, the line's expiries. */
export function lineKeys(key: string): [string, string, string] {
  return [key, key + LINE, key + LINE_TTL]
}

/** Whether a key found by SCAN is a line rather than a lock's key. */
export function isLineKey(key: string): boolean {
  return key.endsWith(LINE) || key.endsWith(LINE_TTL)
}
