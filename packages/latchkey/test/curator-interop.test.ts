/**
 * Curator interop: Apache Curator 5.4's own recipes (Debian's jars, in a JVM: support/curator/CuratorHolder.java)
 * and latchkey's `layout: 'curator'` hold the same znode paths, and mixed holders keep one shared counter exact.
 * The counter is a file, incremented by read, pause, write: two holders at once lose an update.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ZookeeperBackend, zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { curatorClasspath, startCuratorHolder } from './support/curator-java.js'
import { childrenOf, rawClient, removeTree, zkUrl } from './support/zookeeper-env.js'

// Curator's protected names: `_c_` + a UUID + `-` + the recipe's lock name + ZooKeeper's 10-digit sequence.
const PROTECTED = (mark: string) => new RegExp(`^_c_[0-9a-f-]{36}-${mark}\\d{10}$`)

describe("layout: 'curator' against Apache Curator's recipes in a JVM", () => {
  const root = `/curator-interop-${randomUUID().slice(0, 8)}`
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-curator-'))
  const backends: ZookeeperBackend[] = []
  const opened: Locks[] = []
  let classpath = ''

  /** One latchkey client: its own ZooKeeper session, as a separate service would have. */
  const client = (): Locks => {
    const backend = zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000, layout: 'curator', root })
    const locks = createLocks({ backend, ttlMs: 10_000 })
    backends.push(backend)
    opened.push(locks)
    return locks
  }

  /** Starts a Curator holder and resolves once its session is up (its loop starts at `go()`). */
  const java = async (args: readonly (string | number)[]) => {
    const holder = startCuratorHolder(classpath, [zkUrl(), ...args])
    await holder.ready
    return holder
  }

  const increment = async (file: string) => {
    const value = Number(await readFile(file, 'utf8'))
    await delay(2)
    await writeFile(file, String(value + 1))
  }

  beforeAll(() => {
    classpath = curatorClasspath()
  }, 600_000) // a first run may install the JDK and Curator (scripts/servers/java.sh), then compiles

  afterAll(async () => {
    await Promise.all(opened.map((locks) => locks.close()))
    await Promise.all(backends.map((backend) => backend.close()))
    const raw = await rawClient(zkUrl())
    await removeTree(raw, root)
    raw.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('a name that is no znode path under the root is a RangeError before any I/O', async () => {
    const backend = zookeeperBackend({ connectString: '127.0.0.1:1', layout: 'curator', connectTimeoutMs: 100 })
    const locks = createLocks({ backend })
    await expect(locks.mutex('orders//42').tryAcquire()).rejects.toThrow(/segments between "\/" cannot be empty/)
    await locks.close()
    await backend.close()
  })

  it('mutex: InterProcessMutex and latchkey holders increment one counter and it ends exact', async () => {
    const n = 15
    const file = join(dir, 'mutex')
    writeFileSync(file, '0')
    const path = `${root}/orders/42`
    const [a, b] = [client(), client()]
    // latchkey's node is Curator's: `_c_<uuid>-lock-<seq>` in the lock's own path.
    const raw = await rawClient(zkUrl())
    await a.mutex('orders/42').withLock(async () => {
      expect(await childrenOf(raw, path)).toEqual([expect.stringMatching(PROTECTED('lock-'))])
    })
    raw.close()
    const holder = await java(['mutex', path, n, file])
    holder.go()
    // Tokens (the holder node's czxid) in the order the leases were held: they only grow, Curator holders between.
    const tokens: bigint[] = []
    const loop = async (locks: Locks) => {
      for (let i = 0; i < n; i++) {
        await locks.mutex('orders/42').withLock(async (lease) => {
          tokens.push(lease.token)
          await increment(file)
        })
      }
    }
    await Promise.all([loop(a), loop(b), holder.done])
    expect(Number(readFileSync(file, 'utf8'))).toBe(3 * n)
    expect(tokens.every((t, i) => i === 0 || t > (tokens[i - 1] as bigint))).toBe(true)
  }, 60_000)

  it('read-write: InterProcessReadWriteLock writers and latchkey writers keep the counter exact; no reader of either sees it change', async () => {
    const n = 10
    const file = join(dir, 'rw')
    writeFileSync(file, '0')
    const [a, b] = [client(), client()]
    const holder = await java(['rw', `${root}/rw`, n, file])
    holder.go()
    let changes = 0
    const write = async () => {
      for (let i = 0; i < n; i++) await a.readWrite('rw').write.withLock(() => increment(file))
    }
    const read = async () => {
      for (let i = 0; i < n; i++) {
        await b.readWrite('rw').read.withLock(async () => {
          const before = await readFile(file, 'utf8')
          await delay(2)
          if ((await readFile(file, 'utf8')) !== before) changes++
        })
      }
    }
    const [, , outcome] = await Promise.all([write(), read(), holder.done])
    expect(Number(readFileSync(file, 'utf8'))).toBe(2 * n)
    expect(changes).toBe(0)
    expect(outcome.violations).toBe(0)
  }, 60_000)

  it('semaphore: InterProcessSemaphoreV2 and latchkey holders share the permits, never more at once', async () => {
    const n = 10
    const permits = 2
    const inside = join(dir, 'inside')
    await mkdir(inside)
    const [a, b] = [client(), client()]
    const holder = await java(['semaphore', `${root}/sem`, n, inside, permits])
    holder.go()
    let max = 0
    let leaseNames: string[] = []
    const raw = await rawClient(zkUrl())
    const loop = async (locks: Locks) => {
      for (let i = 0; i < n; i++) {
        await locks.semaphore('sem', { permits }).withLock(async () => {
          const mine = join(inside, `node-${randomUUID()}`)
          await writeFile(mine, '')
          await delay(3)
          max = Math.max(max, (await readdir(inside)).length)
          if (leaseNames.length === 0) leaseNames = await childrenOf(raw, `${root}/sem/leases`)
          await rm(mine)
        })
      }
    }
    const [, , , outcome] = await Promise.all([loop(a), loop(b), loop(a), holder.done])
    raw.close()
    expect(Math.max(max, outcome.max)).toBeLessThanOrEqual(permits)
    expect(leaseNames.length).toBeGreaterThan(0)
    for (const name of leaseNames) expect(name).toMatch(PROTECTED('lease-'))
  }, 60_000)
})
