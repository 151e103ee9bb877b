import { type AddressInfo, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Cluster, startCluster } from '../src/cluster.js'
import { exited } from '../src/fork.js'
import { runSale } from '../src/load/run-sale.js'
import { createSale } from '../src/load/sale-client.js'
import type { Strategy } from '../src/store/types.js'
import { FAULT_LOAD, STOCK } from './fault-load.js'
import { ADMIN_TOKEN, tempDir } from './support.js'

describe('kill -9 of a service process in the middle of a sale (3 processes, SQLite store + SQLite locks)', () => {
  const dir = tempDir()
  let cluster: Cluster

  beforeAll(async () => {
    cluster = await startCluster({
      workers: 3,
      storeUrl: `sqlite:${join(dir.path, 'store.db')}`,
      backendUrl: `sqlite:${join(dir.path, 'locks.db')}`,
      // A lock held by the killed process blocks the item until its lease runs out.
      lockTtlMs: 1_000,
      lockWaitMs: 5_000,
      adminToken: ADMIN_TOKEN,
    })
  }, 60_000)
  afterAll(async () => {
    await cluster?.close()
    dir.remove()
  })

  it.each([
    ['lock', 1],
    ['sharded', 2],
  ] as Array<[Strategy, number]>)(
    '%s: no order lost, none doubled, no oversell',
    async (strategy, victim) => {
      const [url] = cluster.urls as [string]
      const { id } = await createSale(url, { item: `fault-${strategy}`, stock: STOCK, strategy }, ADMIN_TOKEN)
      const child = cluster.children[victim]
      if (child === undefined) throw new Error('no such worker')
      let soldAtKill: Promise<number> | undefined
      const row = await runSale({
        ...FAULT_LOAD,
        urls: cluster.urls,
        strategy,
        saleId: id,
        onProgress: (done) => {
          if (soldAtKill !== undefined || done < 30) return
          child.kill('SIGKILL')
          soldAtKill = fetch(`${url}/sales/${id}`)
            .then((r) => r.json() as Promise<{ sold: number }>)
            .then((s) => s.sold)
        },
      })
      await exited(child)
      expect(child.signalCode).toBe('SIGKILL')
      // The kill landed mid-sale: stock was left to sell after it.
      expect(await soldAtKill).toBeLessThan(STOCK)
      expect(row.result.counts.failed).toBe(0)
      expect(row.result.counts.ordered + row.result.counts.recovered).toBe(STOCK)
      for (const check of row.checks) expect(check, check.name).toMatchObject({ ok: true })
      expect(row.oversold).toBe(0)
    },
    120_000,
  )
})

/** `count` ports free right now (the OS picks them; they are released before returning). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer()
          server.once('error', reject)
          server.listen(0, '127.0.0.1', () => resolve(server))
        }),
    ),
  )
  const ports = servers.map((s) => (s.address() as AddressInfo).port)
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  return ports
}

describe('kill -9 of the whole service in the middle of a sale, then a restart on the same ports', () => {
  const dir = tempDir()
  const clusters: Cluster[] = []
  afterAll(async () => {
    for (const cluster of clusters) await cluster.close()
    dir.remove()
  })

  it('lock: after the restart the sale goes on; no order lost, none doubled, no oversell', async () => {
    const options = {
      ports: await freePorts(2),
      storeUrl: `sqlite:${join(dir.path, 'store.db')}`,
      backendUrl: `sqlite:${join(dir.path, 'locks.db')}`,
      lockTtlMs: 1_000,
      lockWaitMs: 5_000,
      adminToken: ADMIN_TOKEN,
    }
    const first = await startCluster(options)
    clusters.push(first)
    const [url] = first.urls as [string]
    const { id } = await createSale(url, { item: 'fault-restart', stock: STOCK, strategy: 'lock' }, ADMIN_TOKEN)
    let restarted: Promise<Cluster> | undefined
    const row = await runSale({
      ...FAULT_LOAD,
      urls: first.urls,
      strategy: 'lock',
      saleId: id,
      onProgress: (done) => {
        if (restarted !== undefined || done < 30) return
        for (const child of first.children) child.kill('SIGKILL')
        restarted = Promise.all(first.children.map(exited)).then(() => startCluster(options))
        void restarted.then((cluster) => clusters.push(cluster))
      },
    })
    expect(restarted).toBeDefined()
    await restarted
    // The kill came after 30 buyers (at most 30 + 48 in flight had been served), so most of the stock was
    // sold by the restarted processes, from the state the killed ones left in the files.
    expect(first.children.every((child) => child.signalCode === 'SIGKILL')).toBe(true)
    expect(row.result.counts.failed).toBe(0)
    expect(row.result.counts.ordered + row.result.counts.recovered).toBe(STOCK)
    for (const check of row.checks) expect(check, check.name).toMatchObject({ ok: true })
  }, 120_000)
})
