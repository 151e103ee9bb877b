import { REPLICATION_LAG_MS } from './runner/fault-deployments.js'
import { NO_FAULT, pauseFault, type ScenarioDef } from './scenario-def.js'

/**
 * The backends whose server clock the lab can move (libfaketime on the server process; SQLite's is the host clock
 * its clients read): not ZooKeeper, whose JVM runs too slowly under libfaketime to serve, nor etcd, which as a Go
 * program bypasses LD_PRELOAD.
 */
const SERVER_CLOCK_BACKENDS = [
  'redis',
  'redlock',
  'sqlite',
  'postgres-table',
  'postgres-advisory',
  'mariadb-table',
  'mariadb-get_lock',
]

/** The scenarios run against every latchkey backend (pauses are 1.5-3x the TTL, as Jepsen's). */
export const SCENARIOS: ScenarioDef[] = [
  { id: 'T1', title: 'baseline contention, no fault', fault: () => NO_FAULT },
  {
    id: 'T2',
    title: 'holder SIGSTOPped past its lease right after entering',
    fault: (ttl) => pauseFault('enter', ttl),
  },
  {
    id: 'T3',
    title: 'holder SIGSTOPped between its validity check and its write',
    fault: (ttl) => pauseFault('in-cs', ttl),
  },
  {
    id: 'T4',
    title: "holder's event loop blocked past its lease right after entering (no timer or renewal runs)",
    fault: (ttl) => ({ ...pauseFault('enter', ttl), kind: 'starve' }),
  },
  {
    id: 'T5',
    title: "the lock service's replies to a client held 1.5-3x the TTL just as it asks for the lock",
    fault: (ttl) => ({ ...pauseFault('acquire', ttl), kind: 'stall-reply' }),
    needs: 'network',
  },
  {
    id: 'T6',
    title: "holder's write held in flight 1.5-3x the TTL; it gives up waiting, releases, the write lands later",
    fault: (ttl) => ({ ...pauseFault('write', ttl), kind: 'delay-write' }),
  },
  {
    id: 'T7',
    title: 'holder cut off from the lock service 2-5x the TTL (silent partition, then healed)',
    fault: (ttl) => ({ kind: 'partition', at: 'enter', everyMs: 2 * ttl, durationMs: [2 * ttl, 5 * ttl] }),
    needs: 'network',
  },
  {
    id: 'T8',
    title:
      'holder SIGSTOPped 1.5-3x the TTL right after entering while the server ends its session (MariaDB KILL, PostgreSQL pg_terminate_backend, etcd lease revoke, ZooKeeper session close, Redis CLIENT KILL)',
    fault: (ttl) => ({ ...pauseFault('enter', ttl), kind: 'session-kill' }),
    needs: 'session',
  },
  {
    id: 'T8b',
    title:
      'T8 at the worst point: the holder SIGSTOPped between its validity check and its write while the server ends its session',
    fault: (ttl) => ({ ...pauseFault('in-cs', ttl), kind: 'session-kill' }),
    needs: 'session',
  },
  {
    id: 'T9a',
    title:
      'a partition inside the lock cluster: the leader cut off from the other members 2-5x the TTL as a client enters (clients still reach every member), then healed',
    fault: (ttl) => ({
      kind: 'cluster-partition',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [2 * ttl, 5 * ttl],
      member: 'leader',
    }),
    needs: 'partition',
  },
  {
    id: 'T9b',
    title:
      "a partition inside the lock cluster: a follower serving the holder's connection cut off from the other members 2-5x the TTL, then healed",
    fault: (ttl) => ({
      kind: 'cluster-partition',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [2 * ttl, 5 * ttl],
      member: 'holder-follower',
    }),
    needs: 'partition',
  },
  {
    id: 'T9c',
    title:
      "RedLock clients seeing different majorities: odd-numbered clients reach nodes 1-3 only, even-numbered nodes 3-5 only (their other links silent), 2-5x the TTL from a client's entry, then healed",
    fault: (ttl) => ({ kind: 'majority-split', at: 'enter', everyMs: 2 * ttl, durationMs: [2 * ttl, 5 * ttl] }),
    needs: 'network',
    backends: ['redlock'],
  },
  {
    id: 'T9d',
    title:
      'T9c with a moving cut: half-way through, the sides swap while the struck holder is still inside (its side now reaches the other majority, of which it holds one node)',
    fault: (ttl) => ({
      kind: 'majority-split',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [2 * ttl, 5 * ttl],
      moves: true,
    }),
    needs: 'network',
    backends: ['redlock'],
  },
  {
    id: 'T10',
    title: 'lock server frozen (SIGSTOP) 1.5-3x the TTL as a client enters (RedLock: 3 of 5 nodes)',
    fault: (ttl) => ({ ...pauseFault('enter', ttl), kind: 'server-pause' }),
    needs: 'server',
  },
  {
    id: 'T13',
    title:
      'power loss: lock server killed -9 as a client enters, its un-fsynced writes dropped (lazy_fs.py), restarted 0-0.1 s later',
    fault: (ttl) => ({ kind: 'server-kill', at: 'enter', everyMs: 2 * ttl, durationMs: [0, 100] }),
    needs: 'power-loss',
    // everysec acknowledges writes up to a second before they are on disk: the lock and the fence INCR can vanish.
    unsafeOn: ['redis-aof-everysec'],
  },
  {
    id: 'K9',
    title: 'holder killed -9 inside the critical section (replaced by a new client)',
    fault: (ttl) => ({ kind: 'kill', at: 'enter', everyMs: 2 * ttl, durationMs: [0, 0] }),
  },
  {
    id: 'S9',
    title:
      'lock server killed -9 as a client enters, restarted 0-0.1 s later (T11 without persistence: redis, RedLock 3 of 5 nodes; T12 durable: AOF, the ZooKeeper/etcd leader, MariaDB and PostgreSQL with their default durability)',
    fault: (ttl) => ({ kind: 'server-kill', at: 'enter', everyMs: 2 * ttl, durationMs: [0, 100] }),
    needs: 'server',
  },
  {
    id: 'T14b',
    title:
      'RedLock: 3 of 5 nodes killed -9 as a client enters, restarted empty (no persistence) only after 1.25-2x the TTL',
    fault: (ttl) => ({ kind: 'server-kill', at: 'enter', everyMs: 2 * ttl, durationMs: [1.25 * ttl, 2 * ttl] }),
    needs: 'server',
    backends: ['redlock'],
  },
  {
    id: 'T15',
    title:
      "lock server's wall clock stepped forward 2x the TTL one TTL into a holder's long job (RedLock: 3 of 5 nodes; SQLite: the host clock every client reads)",
    // One TTL after the grant: the watchdog has renewed, and the waiters' retries are spread out as in any lease.
    fault: (ttl) => ({
      kind: 'server-clock-jump',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [2 * ttl, 2 * ttl],
      delayMs: ttl,
    }),
    backends: SERVER_CLOCK_BACKENDS,
    setup: { kind: 'server-clock' },
  },
  {
    id: 'T16',
    title:
      "lock server's wall clock running at 2x real time for the whole run (RedLock: 3 of 5 nodes; SQLite: the host's)",
    fault: () => ({ ...NO_FAULT, kind: 'server-drift', rate: 2 }),
    backends: SERVER_CLOCK_BACKENDS,
    setup: { kind: 'server-clock', rate: 2 },
  },
  {
    id: 'T16b',
    title: "lock server's wall clock running at 4x real time for the whole run (past the watchdog's TTL/3 renewal)",
    fault: () => ({ ...NO_FAULT, kind: 'server-drift', rate: 4 }),
    backends: SERVER_CLOCK_BACKENDS,
    setup: { kind: 'server-clock', rate: 4 },
  },
  {
    id: 'T17',
    title:
      "holder's own wall clock stepped 1 h as it enters, forward and back at alternate faults (its monotonic clock untouched)",
    fault: (ttl) => ({
      kind: 'client-clock-jump',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [3_600_000, 3_600_000],
    }),
    backends: [
      'redis',
      'redlock',
      'zookeeper',
      'etcd',
      'postgres-table',
      'mariadb-table',
      'postgres-advisory',
      'mariadb-get_lock',
    ],
  },
  {
    id: 'T17b',
    title:
      "the holder's clocks, monotonic included, running at half speed (libfaketime x0.5 on the odd-numbered clients; the runner stamps their events on the real clock); a slowed holder cut off from the lock service 3-4x the TTL as it enters, working on for 0.7x the TTL by its own clock (1.4x in real time)",
    // The lease's local deadline (TTL less 1 % on the holder's clock) falls well after the server let the lock go
    // (1x the TTL in real time): the holder's check before writing, at 1.4x, still passes. The waiters on real
    // clocks retry when the server says the lock expires, and take it over.
    fault: (ttl) => ({
      kind: 'partition',
      at: 'enter',
      everyMs: 2 * ttl,
      durationMs: [3 * ttl, 4 * ttl],
      workMs: Math.round(0.7 * ttl),
      clientClockRate: 0.5,
    }),
    needs: 'network',
    backends: ['redis', 'redlock', 'zookeeper', 'etcd', 'postgres-table', 'mariadb-table', 'postgres-advisory'],
  },
  {
    id: 'T19',
    title: `Redis primary killed -9 as a client enters; its replica (replication ${REPLICATION_LAG_MS} ms behind) promoted, clients moved to it`,
    // The struck holder's job lasts 2x the TTL (durationMs), so it is still at work when its lock is lost.
    fault: (ttl) => ({ kind: 'failover', at: 'enter', everyMs: 2 * ttl, durationMs: [2 * ttl, 2 * ttl] }),
    backends: ['redis'],
    setup: { kind: 'replica' },
  },
]
