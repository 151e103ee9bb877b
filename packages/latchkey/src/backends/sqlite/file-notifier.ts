/**
 * Release notifications between processes of one host, for the SQLite backend: a release touches one of 64
 * small files in a directory beside the database, and every process watches that directory (inotify on Linux).
 * The file name carries the key's bucket, so a release wakes only the waiters of keys in that bucket. A missed
 * event costs nothing but latency: waiters still poll, bounded by the holder's lease.
 */
import { createHash } from 'node:crypto'
import { type FSWatcher, mkdirSync, watch, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LocalNotifier } from '../../backend/local-notifier.js'

const BUCKETS = 64

function bucketOf(key: string): number {
  return createHash('sha1').update(key).digest().readUInt16BE(0) % BUCKETS
}

/** Watches `<database>-latchkey/` and forwards bucket events to the local notifier. */
export class FileNotifier {
  private readonly dir: string
  private readonly watcher: FSWatcher

  private constructor(dir: string, watcher: FSWatcher) {
    this.dir = dir
    this.watcher = watcher
  }

  /** Starts watching; undefined when the platform or file system cannot watch (waiters then poll). */
  static start(databasePath: string, local: LocalNotifier): FileNotifier | undefined {
    if (databasePath === ':memory:' || databasePath === '') return undefined
    const dir = `${databasePath}-latchkey`
    try {
      mkdirSync(dir, { recursive: true })
      const watcher = watch(dir, { persistent: false }, (_event, filename) => {
        const bucket = Number(String(filename ?? '').slice(1))
        if (Number.isInteger(bucket)) local.notifyWhere((key) => bucketOf(key) === bucket)
      })
      watcher.on('error', () => watcher.close())
      return new FileNotifier(dir, watcher)
    } catch {
      return undefined
    }
  }

  /** Tells every process that a lock in `key`'s bucket was released. */
  announce(key: string): void {
    try {
      writeFileSync(join(this.dir, `b${bucketOf(key)}`), '')
    } catch {
      // Best effort: waiters in other processes fall back to polling.
    }
  }

  close(): void {
    this.watcher.close()
  }
}
