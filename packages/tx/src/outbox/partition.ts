/**
 * The relay partition of a message key: FNV-1a (32 bit) of its UTF-8 bytes modulo the partition count. Stable
 * across processes and versions, because it is stored with the row and every relay must agree on it.
 */
export function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(key, 'utf8')) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % partitions
}
