/**
 * The mutex a contended bench worker's waiters take: latchkey's (the build in `dist`) on the backend of `url`, or,
 * with `floor` set, that floor of floors.ts on `floorUrl` (the same requests with no library). For handoff-sides.ts
 * and etcd-contended-cpu.ts, which time a handoff's sides on either.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { FloorName } from './contender.js'

export interface LockSide {
  acquire(waitMs: number): Promise<{ release(): Promise<unknown> } | undefined>
  close(): Promise<void>
}

export async function openLockSide(options: {
  readonly dist: string
  readonly url: string
  readonly floor?: FloorName | undefined
  readonly floorUrl?: string
  readonly namespace: string
  readonly key: string
}): Promise<LockSide> {
  const { dist, url, floor, namespace, key } = options
  if (floor !== undefined) {
    const { openFloor } = await import('./floors.js')
    const contender = await openFloor(floor, options.floorUrl ?? url, namespace, 10_000)
    return { acquire: (waitMs) => contender.acquire(key, waitMs), close: () => contender.close() }
  }
  const lib = await import(pathToFileURL(resolve(dist, 'index.js')).href)
  const backend = await lib.backendFromUrl(url)
  const locks = lib.createLocks({ backend, namespace, ttlMs: 10_000 })
  const mutex = locks.mutex(key)
  return {
    acquire: (waitMs) => mutex.acquire({ waitMs }),
    close: async () => {
      await locks.close()
      await backend.close()
    },
  }
}
