import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Backend } from 'latchkey'
import { backendFromUrl, createLocks, type Locks } from 'latchkey'
import { memoryBackend } from 'latchkey/memory'
import { sqliteBackend } from 'latchkey/sqlite'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { buildApp } from '../src/server/app.js'
import { createMetrics } from '../src/server/metrics.js'
import { mysqlStore } from '../src/store/mysql-store.js'
import { postgresStore } from '../src/store/postgres-store.js'
import { sqliteStore } from '../src/store/sqlite-store.js'
import type { SaleStore } from '../src/store/types.js'
import {
  deleteReserveKeys,
  type OpenReserve,
  openReserve,
  type ReserveOptions,
} from '../src/strategies/reserve/open-reserve.js'

/** The admin token of the tests' services (`adminToken`); {@link adminPost} and {@link adminGet} send it. */
export const ADMIN_TOKEN = `test-admin-${randomUUID()}`

/** A temporary folder removed by `remove()`. */
export function tempDir(): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'flash-sale-test-'))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/**
 * Wraps a store so every call first yields to other work (a turn of the event loop, sometimes 1 ms): the
 * real store is synchronous SQLite, and without this the race windows of read-check-write would be too
 * narrow for a test to ever hit.
 */
export function jitterStore(store: SaleStore): SaleStore {
  const pause = (): Promise<void> =>
    new Promise((resolve) => (Math.random() < 0.8 ? setImmediate(resolve) : setTimeout(resolve, 1)))
  const jittered = new Set<PropertyKey>([
    'orderIdOf',
    'buckets',
    'buyerView',
    'buyAtomic',
    'claimBucket',
    'commitFenced',
    'sellRun',
  ])
  // A proxy, not a copy: the stores are class instances whose methods live on the prototype.
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown
      if (typeof value !== 'function') return value
      const method = value.bind(target) as (...args: unknown[]) => Promise<unknown>
      if (!jittered.has(key)) return method
      return async (...args: unknown[]) => {
        await pause()
        return method(...args)
      }
    },
  })
}

/** Where the tests' PostgreSQL store lives (the same server the latchkey SQL backend tests use). */
export const POSTGRES_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** Where the tests' MariaDB store lives (a throwaway database per test is created there). */
export const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

/** Which store a test runs on. */
export type StoreKind = 'sqlite' | 'postgres' | 'mysql'

/**
 * Opens stores of `kind` for one test: SQLite files in `dir`, or a throwaway PostgreSQL schema that
 * `drop()` removes.
 */
export function testStores(kind: StoreKind, dir: string): { open(): Promise<SaleStore>; drop(): Promise<void> } {
  if (kind === 'sqlite') return { open: async () => sqliteStore(join(dir, 'store.db')), drop: async () => undefined }
  if (kind === 'mysql') return mysqlTestStores()
  const schema = `fs_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  return {
    open: () => postgresStore(POSTGRES_URL, { schema, max: 4 }),
    async drop() {
      const client = new pg.Client(POSTGRES_URL)
      await client.connect()
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      } finally {
        await client.end()
      }
    },
  }
}

/** A throwaway MariaDB database per test, dropped by `drop()`. */
function mysqlTestStores(): { open(): Promise<SaleStore>; drop(): Promise<void> } {
  const database = `fs_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = async (sql: string): Promise<void> => {
    const connection = await mysql.createConnection(MYSQL_URL)
    try {
      await connection.query(sql)
    } finally {
      await connection.end()
    }
  }
  let created: Promise<void> | undefined
  return {
    async open() {
      created ??= admin(`CREATE DATABASE IF NOT EXISTS ${database}`)
      await created
      const url = new URL(MYSQL_URL)
      url.pathname = `/${database}`
      return mysqlStore(url.href, { max: 4 })
    },
    drop: () => admin(`DROP DATABASE IF EXISTS ${database}`),
  }
}

/** One in-process service instance (its own store connection, Locks and app, and reserve if asked). */
export interface Instance {
  readonly app: FastifyInstance
  readonly store: SaleStore
  readonly locks: Locks
  readonly reserve: OpenReserve | undefined
}

/** The `reserve` strategy for test instances: Redis and a key prefix of the test's own (see {@link redisKeys}). */
export interface TestReserve extends ReserveOptions {
  readonly url: string
  readonly keyPrefix: string
}

type BackendKind = 'memory' | 'sqlite' | `${string}://${string}`

/**
 * `count` service instances in this process over one store and one lock backend: `memory` (one backend
 * object shared, as by services in one process), `sqlite`, or a server URL for `backendFromUrl` (a
 * connection each, as by separate processes). With `reserve`, each instance also runs its outbox relay.
 */
export async function startInstances(
  dir: string,
  backendKind: BackendKind,
  count = 2,
  jitter = false,
  storeKind: StoreKind = 'sqlite',
  reserve?: TestReserve,
): Promise<{ instances: Instance[]; close(): Promise<void> }> {
  const stores = testStores(storeKind, dir)
  const shared = backendKind === 'memory' ? memoryBackend() : undefined
  const backends: Backend[] = shared === undefined ? [] : [shared]
  const instances: Instance[] = []
  const close = async (): Promise<void> => {
    for (const { app, locks, store, reserve } of instances) {
      await app.close()
      await reserve?.close()
      await locks.close()
      await store.close()
    }
    for (const backend of backends) await backend.close()
    await stores.drop()
  }
  try {
    for (let i = 0; i < count; i++) {
      const backend = shared ?? (await openBackend(backendKind, dir))
      if (shared === undefined) backends.push(backend)
      instances.push(await startInstance(backend, await stores.open(), jitter, reserve))
    }
  } catch (error) {
    await close()
    throw error
  }
  return { instances, close }
}

function openBackend(kind: BackendKind, dir: string): Promise<Backend> {
  return kind === 'sqlite' ? Promise.resolve(sqliteBackend({ path: join(dir, 'locks.db') })) : backendFromUrl(kind)
}

async function startInstance(
  backend: Backend,
  store: SaleStore,
  jitter: boolean,
  reserveOptions: TestReserve | undefined,
): Promise<Instance> {
  const metrics = createMetrics()
  const locks = createLocks({ backend, namespace: 'test', onEvent: metrics.onLockEvent })
  const reserve =
    reserveOptions === undefined ? undefined : await openReserve(reserveOptions.url, store, reserveOptions)
  const app = buildApp({
    store: jitter ? jitterStore(store) : store,
    locks,
    metrics,
    lockWaitMs: 10_000,
    adminToken: ADMIN_TOKEN,
    reserve: reserve?.reserve,
    relay: reserve?.relay,
  })
  await app.ready()
  return { app, store, locks, reserve }
}

/** Where the tests' Redis lives (`LATCHKEY_REDIS_URL`). */
export const REDIS_URL = process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379/0'

/**
 * A key prefix of one test's own in Redis, and `remove()`, which deletes every key under it (the reserve
 * strategy's keys are `{prefix}:...`).
 */
export function redisKeys(url = REDIS_URL): { prefix: string; remove(): Promise<void> } {
  const prefix = `fs-test-${randomUUID().slice(0, 8)}`
  return { prefix, remove: () => deleteReserveKeys(url, prefix) }
}

/**
 * Creates a sale through `instances[0]` that starts in 500 ms, lets every instance learn it before then (an
 * early order answered 425 caches the sale), and resolves with its id once it has started: so no instance
 * lags the others (reading the sale from a network store) when the concurrent buyers come. On a loaded machine
 * the creation and the early orders can outlast the 500 ms (an early order then buys a unit): that sale is left
 * aside and a new one is made with a start four times as far, up to 8 s.
 */
export async function startingSale(instances: readonly Instance[], body: Record<string, unknown>): Promise<string> {
  for (let leadMs = 500; ; leadMs *= 4) {
    const startsAt = Date.now() + leadMs
    const id = (await adminPost((instances[0] as Instance).app, '/sales', { ...body, startsAt })).body.id as string
    let early = 425
    for (const { app } of instances) {
      early = (await post(app, `/sales/${id}/orders`, { userId: 'early-bird', quantity: 1 })).status
      if (early !== 425) break
    }
    if (early !== 425) {
      if (Date.now() >= startsAt && leadMs < 8_000) continue
      throw new Error(`expected 425 before the sale starts, got ${early}`)
    }
    // Not an ordering guess: the sale opens at a wall-clock time (the service answers 425 before `startsAt`),
    // so this waits out the sale's own start delay, plus 5 ms for clock granularity.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startsAt - Date.now() + 5)))
    return id
  }
}

/** One buyer's answer from {@link sendBuyers}. */
export interface BuyerAnswer {
  readonly user: number
  readonly status: number
  readonly body: Record<string, unknown>
}

/**
 * Sends `buyers` users' orders for one unit of sale `id`, alternating between instances `a` and `b`; every 20th
 * buyer also sends a second order through the other instance at the same time.
 */
export function sendBuyers(a: Instance, b: Instance, id: string, buyers: number): Promise<BuyerAnswer[]> {
  const requests: Array<Promise<BuyerAnswer>> = []
  for (let user = 0; user < buyers; user++) {
    const send = (via: Instance) =>
      post(via.app, `/sales/${id}/orders`, { userId: `u${user}`, quantity: 1 }).then((r) => ({ user, ...r }))
    requests.push(send(user % 2 === 0 ? a : b))
    if (user % 20 === 0) requests.push(send(user % 2 === 0 ? b : a))
  }
  return Promise.all(requests)
}

/** POSTs JSON through `app.inject` and returns status and parsed body. */
export async function post(
  app: FastifyInstance,
  url: string,
  payload: unknown,
): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
  const response = await app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> })
  return { status: response.statusCode, body: response.json(), headers: response.headers }
}

/** {@link post} with the admin token, for the admin routes (`POST /sales`). */
export async function adminPost(
  app: FastifyInstance,
  url: string,
  payload: unknown,
): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
  const response = await app.inject({
    method: 'POST',
    url,
    payload: payload as Record<string, unknown>,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  return { status: response.statusCode, body: response.json(), headers: response.headers }
}

/** GETs an admin route (`/sales/:id/audit`) through `app.inject` with the admin token. */
export async function adminGet(
  app: FastifyInstance,
  url: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return { status: response.statusCode, body: response.json() }
}
