/**
 * Where a lock's nodes live and how they are named, per layout:
 *
 * - `latchkey` (default): `<root>/<encoded key>/_c_<owner>-<kind>-<seq>` (see `zk-nodes.ts`); a semaphore in the
 *   lock node of `<key>\0semaphore`.
 * - `curator`: Apache Curator's recipes on the path `<root>/<key>` (the key's `/` separate znodes), so Java services
 *   using Curator and latchkey exclude each other (names checked against Curator 5.4's `LockInternals`,
 *   `StandardLockInternalsDriver`, `InterProcessReadWriteLock` and `InterProcessSemaphoreV2`):
 *   - mutex and fair mutex: `InterProcessMutex`, children `_c_<uuid>-lock-<seq>`;
 *   - read / write: `InterProcessReadWriteLock`, children `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>`;
 *   - semaphore: `InterProcessSemaphoreV2`, lease nodes `<path>/leases/_c_<uuid>-lease-<seq>`, taken while holding
 *     the recipe's internal mutex `<path>/locks/_c_<uuid>-lock-<seq>` (`zk-curator-semaphore.ts`).
 *
 *   Curator sorts children by the text after the last `lock-` (`__READ__`, `__WRIT__`): the 10-digit sequence for
 *   every recipe's own nodes, the whole name for others (after every sequence number). latchkey sorts the same way.
 */

import { stateKey } from '../../backend/grant-rules.js'
import type { LockKind, LockRef } from '../../backend/types.js'
import { type ChildParser, encodeSegment, foreignNode, type LockNode, nodePrefix, parseChild } from './zk-nodes.js'

/** `latchkey` (default) or `curator`: see the module comment. */
export type ZkLayoutName = 'latchkey' | 'curator'

/** Names and paths of one layout. */
export interface ZkLayout {
  readonly name: ZkLayoutName
  /** The name prefix of `owner`'s node (ZooKeeper appends the sequence). */
  prefix(owner: string, kind: LockKind, permits: number): string
  /** Parses any child of a lock's node directory (a child no layout names is an exclusive holder). */
  readonly parse: ChildParser
  /** The lock's znode: the parent of its holders' nodes, or for Curator's semaphore the recipe's base path. */
  lockPath(root: string, ref: LockRef): string
  /** The parent of `ref`'s holder nodes. */
  nodesParent(root: string, ref: LockRef): string
  /** For Curator's semaphore: the internal mutex's node (`<path>/locks`); undefined where there is none. */
  gateParent(root: string, ref: LockRef): string | undefined
}

export const latchkeyZkLayout: ZkLayout = Object.freeze({
  name: 'latchkey' as const,
  prefix: (owner: string, kind: LockKind, permits: number) => nodePrefix(owner, kind, permits),
  parse: parseChild,
  lockPath: (root: string, ref: LockRef) => `${root}/${encodeSegment(stateKey(ref))}`,
  nodesParent: (root: string, ref: LockRef) => `${root}/${encodeSegment(stateKey(ref))}`,
  gateParent: () => undefined,
})

/** Curator's lock names: `LockInternals`' `lock-`, the read-write lock's, the semaphore's `lease-`. */
const MARKS: Readonly<Record<LockKind, string>> = Object.freeze({
  mutex: 'lock-',
  fair: 'lock-',
  read: '__READ__',
  write: '__WRIT__',
  semaphore: 'lease-',
})
const CURATOR_NODE = /^_c_(.+)-(lock-|__READ__|__WRIT__|lease-)(\d{10})$/
const KIND_OF: Readonly<Record<string, LockKind>> = {
  'lock-': 'mutex',
  __READ__: 'read',
  __WRIT__: 'write',
  'lease-': 'semaphore',
}

/** A child of a Curator lock path: a recipe's protected node, or a foreign one (sorted by its whole name, as Curator). */
export function parseCuratorChild(name: string): LockNode {
  const m = CURATOR_NODE.exec(name)
  if (m === null) return foreignNode(name, true)
  return { name, owner: m[1] as string, kind: KIND_OF[m[2] as string] as LockKind, order: m[3] as string }
}

/** `%` and what ZooKeeper refuses in a path (`PathUtils.validatePath`: controls, private use, surrogates). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what ZooKeeper refuses
const ESCAPED = /[%\u0000-\u001f\u007f-\u009f\ue000-\uf8ff\ufff0-\uffff]|[\ud800-\udbff][\udc00-\udfff]/g

/**
 * A lock key as a path under `root`: its `/` separate znodes (a leading `/` is dropped), e.g. `orders/42` →
 * `<root>/orders/42`. `%` and characters ZooKeeper refuses in a path are percent-encoded (no Curator client can
 * name those paths anyway), as is a segment `.` or `..`. Throws `RangeError` for an empty segment, before any I/O.
 */
export function curatorPath(root: string, key: string): string {
  const relative = key.startsWith('/') ? key.slice(1) : key
  const segments = relative.split('/').map((segment) => {
    if (segment === '') {
      throw new RangeError(
        `latchkey: with layout 'curator' a lock's namespace:name is its znode path under the root, so its segments between "/" cannot be empty; received ${JSON.stringify(key)}`,
      )
    }
    if (segment === '.' || segment === '..') return segment.replace(/\./g, '%2E')
    return segment.replace(ESCAPED, (c) => encodeURIComponent(c))
  })
  return `${root}/${segments.join('/')}`
}

export const curatorZkLayout: ZkLayout = Object.freeze({
  name: 'curator' as const,
  prefix: (owner: string, kind: LockKind) => `_c_${encodeSegment(owner)}-${MARKS[kind]}`,
  parse: parseCuratorChild,
  lockPath: (root: string, ref: LockRef) => curatorPath(root, ref.key),
  nodesParent: (root: string, ref: LockRef) =>
    ref.kind === 'semaphore' ? `${curatorPath(root, ref.key)}/leases` : curatorPath(root, ref.key),
  gateParent: (root: string, ref: LockRef) =>
    ref.kind === 'semaphore' ? `${curatorPath(root, ref.key)}/locks` : undefined,
})

/** The layout named `name`. */
export function zkLayoutNamed(name: ZkLayoutName): ZkLayout {
  return name === 'curator' ? curatorZkLayout : latchkeyZkLayout
}
