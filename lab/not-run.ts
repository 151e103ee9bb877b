/**
 * The cells of the test plan (scenarios T1-T21) that `npm run lab` does not measure, and why: either they cannot
 * be tested on one machine, or the lab does not have them yet. Printed under the matrix so no gap is silent.
 */
export const NOT_RUN: { cells: string; why: string }[] = [
  {
    cells: "T8 (the server ends the paused holder's session: KILL, pg_terminate_backend, lease revoke)",
    why: 'not built yet. The library side is covered by the normal suite (a killed session aborts lease.signal on every SQL strategy).',
  },
  {
    cells: 'T9 (a partition inside the lock cluster)',
    why: 'not built yet: the members of the ZooKeeper ensemble and the etcd cluster all listen on 127.0.0.1, so cutting one off from the others needs each member in a network namespace of its own.',
  },
  {
    cells: 'T10 and T12 on MariaDB and PostgreSQL',
    why: "not run: the lab uses the machine's shared MariaDB and PostgreSQL, which it must not freeze or kill (the test suite and other users share them); both keep locks in server memory (GET_LOCK, advisory locks, a table strategy's session), so a restart frees them and the holder's dropped connection is its loss signal, which the normal suite tests.",
  },
  {
    cells: 'T13 (power loss: un-fsynced writes lost)',
    why: 'not testable here yet: kill -9 keeps data already written in the page cache, so it does not lose un-fsynced writes; that needs a filesystem that drops them (LazyFS, a FUSE filesystem built from source), which this machine does not have.',
  },
  {
    cells: 'T14(b) (a RedLock node restarted after more than the TTL)',
    why: 'not built yet; T14(a), a majority of nodes restarted at once without persistence, is the S9 row of the redlock column.',
  },
  {
    cells: 'T15-T17 (server and client clock jumps and drift)',
    why: 'not built yet (libfaketime is installed by lab/setup.sh). etcd cells are not testable on one machine: Go programs bypass LD_PRELOAD, and changing the host clock would affect every process.',
  },
  {
    cells: 'T19 (Redis primary/replica failover)',
    why: 'not built yet; latchkey documents that a lock on a replicated Redis can be lost on failover (replication is asynchronous).',
  },
  {
    cells: 'T20 (a lock on a pooled connection that is returned or reconnected)',
    why: 'a library property, tested in the normal suite: the SQL session strategies pin a dedicated connection and treat its loss as a lost lease.',
  },
  {
    cells: 'T21 (fence monotonicity under churn)',
    why: 'measured across every run instead of a dedicated one: the token regression column checks real-time monotonicity in every run, including the server kills.',
  },
]
