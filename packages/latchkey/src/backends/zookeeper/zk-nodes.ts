/**
 * Znode layout and the grant rules over a lock's children, as pure functions.
 *
 *   <root>/<encoded lock key>/_c_<owner>-<kind>-<10-digit sequence>     (EPHEMERAL_SEQUENTIAL)
 *   <root>/<encoded lock key>/_c_<owner>-semaphore-<permits>-<10-digit sequence>
 *
 * A semaphore node carries its permit count in its name, so the create that takes a place in line also
 * records the count, and one listing tells every node's count: the first node's count is in force.
 *
 * The `_c_<owner>-` prefix is Curator's "protected" name: after a connection loss during create we find our
 * own node by it instead of leaving an orphan. Order is by the sequence suffix only.
 *
 * A child that is not a latchkey node (another client's, e.g. kazoo's `<id>__lock__<seq>`, or one made by hand)
 * is never ignored: it is an exclusive holder at its place in line (its sequence suffix; a name without one stands
 * first), so a client that does not know our names still excludes us. `zk-curator-names.ts` parses Curator's.
 */
import type { LockKind } from '../../backend/types.js'

/** One child of a lock node. */
export interface LockNode {
  readonly name: string
  /** The owner, URI-encoded as in the name. */
  readonly owner: string
  readonly kind: LockKind
  /** What the line is sorted by (string order): the 10-digit sequence suffix (see {@link orderOf}). */
  readonly order: string
  /** A child no layout names: an exclusive holder whose lease latchkey cannot read (kind `mutex`). */
  readonly foreign?: true
  /** A semaphore node's permit count; absent in other kinds' names (and in names of older versions). */
  readonly permits?: number | undefined
}

const NODE = /^_c_(.+)-(mutex|fair|read|write|semaphore)(?:-(\d+))?-(\d{10,})$/
/** Kinds that hold alone: their holder is the first node of the line, and their waiter watches the node just ahead. */
export const EXCLUSIVE: ReadonlySet<LockKind> = new Set<LockKind>(['mutex', 'fair', 'write'])

/** A path segment for any lock key: URI-encoded, with `.` encoded too so `.` and `..` cannot occur. */
export function encodeSegment(value: string): string {
  return encodeURIComponent(value).replace(/\./g, '%2E').replace(/\*/g, '%2A')
}

/** The name prefix of `owner`'s node (ZooKeeper appends the sequence); a semaphore's names its `permits`. */
export function nodePrefix(owner: string, kind: LockKind, permits?: number): string {
  const count = kind === 'semaphore' && permits !== undefined ? `${permits}-` : ''
  return `_c_${encodeSegment(owner)}-${kind}-${count}`
}

/** Parses a child name; undefined for names that are not lock nodes. */
export function parseNode(name: string): LockNode | undefined {
  const m = NODE.exec(name)
  if (m === null) return undefined
  const permits = m[3] === undefined ? undefined : Number(m[3])
  return { name, owner: m[1] as string, kind: m[2] as LockKind, order: m[4] as string, permits }
}

const SEQUENCE = /\d{10}$/

/**
 * A child's place in line: its sequence suffix (ZooKeeper appends 10 digits). A name without one is no
 * sequential node: by default it stands first (`''`), blocking everyone until deleted; `wholeName` sorts it by its
 * name instead, as Curator does (after every sequence number).
 */
export function orderOf(name: string, wholeName = false): string {
  return SEQUENCE.exec(name)?.[0] ?? (wholeName ? name : '')
}

/** A child no layout names, as an exclusive holder in line. */
export function foreignNode(name: string, wholeName = false): LockNode {
  return { name, owner: '', kind: 'mutex', order: orderOf(name, wholeName), foreign: true }
}

/** Parses every child of a lock node: latchkey's own names, and any other child as an exclusive holder. */
export type ChildParser = (name: string) => LockNode

/** Children parsed lately: every listing of a busy line names mostly the same nodes (a LockNode never changes). */
const parsed = new Map<string, LockNode>()
/** Names kept at most; the map starts over past it. */
const PARSED_KEPT = 4_096

const parseUncached = (name: string): LockNode => parseNode(name) ?? foreignNode(name)

/** The default layout's parser. */
export const parseChild: ChildParser = (name) => {
  let node = parsed.get(name)
  if (node === undefined) {
    node = parseUncached(name)
    if (parsed.size >= PARSED_KEPT) parsed.clear()
    parsed.set(name, node)
  }
  return node
}

/**
 * A semaphore's line as its rules see it: the count in force (the first node's that names one) and the nodes
 * that agree with it. A node of another count is withdrawing (its own try reports the mismatch and deletes
 * it), so it takes no permit and blocks nobody meanwhile.
 */
export function agreeingLine(line: readonly LockNode[]): { inForce: number | undefined; line: LockNode[] } {
  const inForce = line.find((n) => n.permits !== undefined)?.permits
  if (inForce === undefined) return { inForce, line: [...line] }
  return { inForce, line: line.filter((n) => n.permits === undefined || n.permits === inForce) }
}

/**
 * Every child of a lock node, in line order (foreign ones included, see the module comment). A lone child is not kept
 * in `parsed`: that is an uncontended lock's listing of its own new node, which no listing names again. Kept, such
 * names filled the map with one-time entries that lived until it started over, so the collector promoted them: with 50
 * uncontended locks taken and released in a loop, not keeping them took the client CPU per pair from 62-66 to 52-59 µs.
 */
export function lineOf(children: readonly string[], parse: ChildParser = parseChild): LockNode[] {
  if (children.length === 1 && parse === parseChild) return [parseUncached(children[0] as string)]
  return children.map(parse).sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0))
}

/** Whether the node at `index` may hold the lock now (Curator's rules; `permits` for semaphores). */
export function isEligible(line: readonly LockNode[], index: number, permits: number): boolean {
  const node = line[index]
  if (node === undefined) return false
  if (EXCLUSIVE.has(node.kind)) return index === 0
  // A reader (or semaphore holder) waits for earlier exclusive nodes (held or waiting), so writers are not starved.
  for (let i = 0; i < index; i++) if (EXCLUSIVE.has((line[i] as LockNode).kind)) return false
  return node.kind !== 'semaphore' || index < permits
}

/** The nodes that may hold the lock now: the ones whose lease can block others. */
export function holdersOf(line: readonly LockNode[], permits: number): LockNode[] {
  return line.filter((_, i) => isEligible(line, i, permits))
}

/** Where a node stands in line. */
export interface Standing {
  readonly eligible: boolean
  /** Holders ahead that block this node (candidates for expiry). */
  readonly blockers: readonly LockNode[]
  /**
   * Nodes to watch so that the one release that matters wakes us, and only us (no herd):
   * the predecessor, the nearest earlier exclusive node for a reader, or for a semaphore's first waiter every holder.
   */
  readonly watch: readonly LockNode[]
  /** Whether a data change of a watched node must wake us too (a semaphore waiter's predecessor got its permit). */
  readonly wakeOnChange: boolean
}

/** Evaluates the node at `index` (which must exist). */
export function standingOf(line: readonly LockNode[], index: number, permits: number): Standing {
  const me = line[index] as LockNode
  if (isEligible(line, index, permits)) return { eligible: true, blockers: [], watch: [], wakeOnChange: false }
  const ahead = line.slice(0, index)
  const exclusive = ahead.filter((n) => EXCLUSIVE.has(n.kind))
  // Only the first waiter checks the holders' leases for expiry; the others wait their turn in line.
  if (me.kind === 'semaphore' && exclusive.length === 0) {
    const first = index === permits
    const holders = ahead.slice(0, permits)
    return {
      eligible: false,
      blockers: first ? holders : [],
      watch: first ? holders : ahead.slice(-1),
      wakeOnChange: !first,
    }
  }
  if (me.kind === 'read' || me.kind === 'semaphore') {
    // Behind an exclusive node (a semaphore line has one only when a foreign child is in it): wait for the nearest.
    const writers = exclusive
    const onlyHolder = writers.length === 1 && writers[0] === ahead[0]
    return { eligible: false, blockers: onlyHolder ? writers : [], watch: writers.slice(-1), wakeOnChange: false }
  }
  const holders = holdersOf(ahead, permits)
  const first = holders.length === ahead.length
  return { eligible: false, blockers: first ? holders : [], watch: ahead.slice(-1), wakeOnChange: false }
}

/**
 * The lease a holder writes into its node: TTL in ms (an empty node is a waiter that holds nothing yet); in
 * Curator's semaphore also the permit count (Curator stores none, so latchkey clients agree on theirs this way).
 */
export function encodeLease(ttlMs: number | undefined, permits?: number): Buffer {
  if (ttlMs === undefined && permits === undefined) return EMPTY
  if (permits !== undefined) return Buffer.from(JSON.stringify({ ttlMs, permits }))
  let data = leases.get(ttlMs as number)
  if (data === undefined) {
    data = Buffer.from(JSON.stringify({ ttlMs }))
    if (leases.size >= 64) leases.clear()
    leases.set(ttlMs as number, data)
  }
  return data
}

/** Node data is only ever copied into requests, never written to: the same lease's bytes are shared. */
const EMPTY = Buffer.alloc(0)
const leases = new Map<number, Buffer>()

function decodeJson(data: Buffer | null | undefined): { ttlMs?: unknown; permits?: unknown } | undefined {
  if (data === null || data === undefined || data.length === 0 || data[0] !== 0x7b) return undefined
  try {
    return JSON.parse(data.toString('utf8')) as { ttlMs?: unknown; permits?: unknown }
  } catch {
    return undefined
  }
}

/** Reads a node's lease; undefined for a waiter's (empty) node and for data another client wrote. */
export function decodeLease(data: Buffer | null | undefined): { ttlMs: number } | undefined {
  const parsed = decodeJson(data)
  return typeof parsed?.ttlMs === 'number' ? { ttlMs: parsed.ttlMs } : undefined
}

/** The permit count a latchkey node of Curator's semaphore carries; undefined for others. */
export function decodePermits(data: Buffer | null | undefined): number | undefined {
  const parsed = decodeJson(data)
  return typeof parsed?.permits === 'number' ? parsed.permits : undefined
}
