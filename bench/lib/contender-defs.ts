/**
 * How each kind of report row is defined: a latchkey backend, a Redis peer, a floor, Apache Curator in a JVM, and
 * the floor sets of the ZooKeeper and etcd cells. The catalog (catalog.ts) says which rows run, in which order.
 */
import type { ContenderSpec, FloorName } from './contender.js'

/** One row of the report. */
export interface ContenderDef {
  readonly id: string
  readonly label: string
  /** Shown in the peers table (Redis libraries), the backends table, or both. */
  readonly tables: readonly ('peers' | 'backends')[]
  /** Can wait for a taken lock (contended scenarios). */
  readonly waits: boolean
  /** Its waiters can live in several OS processes (false: all in one). */
  readonly crossProcess: boolean
  /** The most waiters it is given on one lock (the report says where this scales a scenario down). */
  readonly maxWaiters: number
  /** Redis servers whose INFO commandstats count its server commands. */
  readonly probeUrls: readonly string[]
  /** Only these scenarios (default: every one of the run). */
  readonly scenarios?: readonly string[]
  /** A ZooKeeper connect string: the contender is Apache Curator in a JVM (contender-pools.ts), not a worker. */
  readonly curator?: string
  /** `concurrency`: locks one process may hold at once (sizes SQL pools; default the URL's own). */
  readonly spec: (namespace: string, ttlMs: number, concurrency?: number) => ContenderSpec
}

/** The most waiters any contender is given on one lock (BENCH_MAX_WAITERS). */
export const WAITER_CAP = Number(process.env.BENCH_MAX_WAITERS ?? 1_000)

export function latchkey(
  id: string,
  label: string,
  url: string | ((concurrency?: number) => string),
  o: Partial<ContenderDef> & { pollMs?: number; dist?: string; sessions?: number } = {},
): ContenderDef {
  return {
    id,
    label,
    tables: o.tables ?? ['backends'],
    waits: true,
    crossProcess: o.crossProcess ?? true,
    maxWaiters: Math.min(WAITER_CAP, o.maxWaiters ?? 1_000),
    probeUrls: o.probeUrls ?? [],
    ...(o.scenarios === undefined ? {} : { scenarios: o.scenarios }),
    spec: (namespace, ttlMs, concurrency) => ({
      type: 'latchkey',
      url: typeof url === 'string' ? url : url(concurrency),
      namespace,
      ttlMs,
      ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
      ...(o.dist === undefined ? {} : { dist: o.dist }),
      ...(o.sessions === undefined ? {} : { sessions: o.sessions }),
    }),
  }
}

export function peer(
  id: string,
  label: string,
  name: 'raw' | 'redlock4' | 'redlock5' | 'redis-semaphore',
  url: string,
) {
  const def: ContenderDef = {
    id,
    label,
    tables: ['peers'],
    waits: name !== 'raw',
    crossProcess: true,
    maxWaiters: WAITER_CAP,
    probeUrls: [url],
    spec: (namespace, ttlMs) => ({ type: 'peer', peer: name, url, namespace, ttlMs }),
  }
  return def
}

/** A floor; by default one that cannot wait, in the backends table. */
export function floor(
  id: string,
  label: string,
  name: FloorName,
  url: string,
  o: Partial<Pick<ContenderDef, 'tables' | 'waits' | 'maxWaiters' | 'probeUrls' | 'crossProcess' | 'scenarios'>> & {
    sessions?: number
  } = {},
): ContenderDef {
  return {
    id,
    label,
    tables: o.tables ?? ['backends'],
    waits: o.waits ?? false,
    crossProcess: o.crossProcess ?? true,
    ...(o.scenarios === undefined ? {} : { scenarios: o.scenarios }),
    maxWaiters: Math.min(WAITER_CAP, o.maxWaiters ?? 0),
    probeUrls: o.probeUrls ?? [],
    spec: (namespace, ttlMs) => ({
      type: 'floor',
      floor: name,
      url,
      namespace,
      ttlMs,
      ...(o.sessions === undefined ? {} : { sessions: o.sessions }),
    }),
  }
}

/** Apache Curator 5.4's InterProcessMutex (Debian's jars), in a JVM that spreads waiters over 4 sessions. */
export function curator(id: string, label: string, connect: string): ContenderDef {
  return {
    id,
    label,
    tables: ['backends'],
    waits: true,
    crossProcess: true,
    maxWaiters: WAITER_CAP,
    probeUrls: [],
    curator: connect,
    spec: (namespace, ttlMs) => ({ type: 'curator', connect, namespace, ttlMs }),
  }
}

/**
 * Curator's InterProcessMutex recipe on the bare ZooKeeper protocol (lib/zk-recipe-floor.ts), in latchkey's two
 * layouts of the Curator comparison: the uncontended cells and 10 waiters over 4 processes, and 10 waiters in one
 * process over 4 sessions.
 */
export function zkFloors(id: string, where: string, connect: string): ContenderDef[] {
  const label = `floor: Curator's recipe on the bare protocol (${where})`
  return [
    floor(id, label, 'zk-recipe', connect, { waits: true, maxWaiters: 10, scenarios: ['c1', 'c50', 'w10'] }),
    floor(`${id}-1p`, `${label}, waiters in one process (4 sessions)`, 'zk-recipe', connect, {
      waits: true,
      maxWaiters: 10,
      crossProcess: false,
      scenarios: ['w10'],
      sessions: 4,
    }),
  ]
}

/**
 * The two etcd lock recipes with no library, on latchkey's transport: the contended cells' floors (client CPU and gap).
 * latchkey's own line (lib/etcd-line-floor.ts), and the other recipe, each waiter watching the key before its own
 * (Go's concurrency.Mutex, lib/etcd-go-mutex-floor.ts).
 */
export function etcdFloors(url: string): ContenderDef[] {
  const contended = { waits: true, maxWaiters: 100, scenarios: ['w10', 'w100'] }
  return [
    floor('etcd-floor', "floor: latchkey's etcd line, no library", 'etcd-line', url, contended),
    floor('etcd-go-floor', "floor: Go's concurrency.Mutex recipe, no library", 'etcd-go', url, contended),
  ]
}
