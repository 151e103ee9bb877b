/**
 * Lock nodes (the persistent parents of the owners' ephemeral nodes): created on demand, deleted when idle.
 * ZooKeeper's CONTAINER nodes (3.5.3+) would be reaped by the server itself, but node-zookeeper-client (which a user
 * may hand in) cannot send the createContainer request (a CONTAINER flag on a plain create makes a persistent node;
 * tested), so the process that empties a lock node deletes it after `idleMs`. A delete of a non-empty node fails
 * atomically, so this never races a new waiter; one whose create meets a vanished parent recreates it.
 */

import { BackendUnavailableError } from '../../errors.js'
import { isConnectionError, ZK, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { removeQuietly } from './zk-node-ops.js'

export class ZkParents {
  /** Lock nodes waiting to be deleted when idle: when this process last used each, and its timer. */
  private readonly idle = new Map<string, { lastUsed: number; timer: NodeJS.Timeout | undefined }>()

  /** @param root nodes at or above it are never deleted (the root itself is shared by every lock) */
  constructor(
    private readonly live: () => ZkConnection | undefined,
    private readonly idleMs: number,
    private readonly root: string,
  ) {}

  /** Creates `path` (and, when missing, its ancestors): the lock node first, as it usually is the only one missing. */
  async ensure(conn: ZkConnection, path: string): Promise<void> {
    try {
      await conn.run('create', (cb) => conn.client.create(path, Buffer.alloc(0), ZK.PERSISTENT, cb))
    } catch (error) {
      const code = zkCode(error)
      if (code === ZK.NO_NODE && path.lastIndexOf('/') > 0) {
        await this.ensure(conn, path.slice(0, path.lastIndexOf('/')))
        return this.ensure(conn, path)
      }
      // A top-level node has no parent to miss, unless the client is chrooted to a node that does not exist
      // (only a client handed in can be: a chroot in connectString is part of the root and created).
      if (code === ZK.NO_NODE) {
        throw new BackendUnavailableError(
          `zookeeper backend at ${conn.server}: cannot create ${path}: the chroot of the client does not exist; create it, or pass connectString (whose chroot the backend creates)`,
          { cause: error },
        )
      }
      // "Exists" is success; a lost reply is settled by the caller's next create.
      if (code !== ZK.NODE_EXISTS && !isConnectionError((error as { cause?: unknown }).cause)) throw error
    }
  }

  /**
   * Deletes `parent` once nobody in this process has used it for `idleMs` (and if it is empty then). Called at every
   * release: it only records the time, and the lock node's one timer, when it fires, waits again for what is left of
   * `idleMs` since the last use (a timer cleared and set per acquisition was a tenth of the timers a busy lock set).
   */
  emptied(parent: string): void {
    const idle = this.idle.get(parent)
    if (idle !== undefined) {
      idle.lastUsed = performance.now()
      return
    }
    const entry = { lastUsed: performance.now(), timer: undefined as NodeJS.Timeout | undefined }
    const fire = (): void => {
      const left = entry.lastUsed + this.idleMs - performance.now()
      if (left > 0) {
        entry.timer = setTimeout(fire, left)
        entry.timer.unref()
        return
      }
      this.idle.delete(parent)
      const conn = this.live()
      if (conn?.alive === true) void this.removeEmpty(conn, parent).catch(() => undefined)
    }
    entry.timer = setTimeout(fire, this.idleMs)
    entry.timer.unref()
    this.idle.set(parent, entry)
  }

  /**
   * Deletes `path` if empty, then each ancestor below the root that this leaves empty (a lock path of the
   * `curator` layout can be several znodes deep, and Curator's semaphore keeps `locks` and `leases` in its own).
   */
  async removeEmpty(conn: ZkConnection, path: string): Promise<boolean> {
    if (!(await removeQuietly(conn, path))) return false
    const up = path.slice(0, path.lastIndexOf('/'))
    if (up.length > this.root.length && up.startsWith(`${this.root}/`)) await this.removeEmpty(conn, up)
    return true
  }

  /** Stops the timers and returns the lock nodes still waiting for deletion (the caller deletes them on close). */
  drain(): string[] {
    for (const { timer } of this.idle.values()) clearTimeout(timer)
    const parents = [...this.idle.keys()]
    this.idle.clear()
    return parents
  }
}
