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
  const wrapped = { ...store } as Record<string, unknown>
  for (const key of ['hasOrder', 'buckets', 'buyAtomic', 'claimBucket', 'commitFenced'] as const) {
    const fn = store[key] as (...args: unknown[]) => Promise<unknown>
    wrapped[key] = async (...args: unknown[]) => {
      await pause()
      return fn(...args)
    }
  }
  return wrapped as unknown as SaleStore
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

/** One in-process service instance (its own store connection, Locks and app). */
export interface Instance {
  readonly app: FastifyInstance
  readonly store: SaleStore
  readonly locks: Locks
}

/**
 * `count` service instances in this process over one store and one lock backend: `memory` (one backend
 * object shared, as by services in one process), `sqlite`, or a server URL for `backendFromUrl` (a
 * connection each, as by separate processes).
 */
export async function startInstances(
  dir: string,
  backendKind: 'memory' | 'sqlite' | `${string}://${string}`,
  count = 2,
  jitter = false,
  storeKind: StoreKind = 'sqlite',
): Promise<{ instances: Instance[]; close(): Promise<void> }> {
  const stores = testStores(storeKind, dir)
  const shared = backendKind === 'memory' ? memoryBackend() : undefined
  const backends: Backend[] = []
  const instances: Instance[] = []
  for (let i = 0; i < count; i++) {
    const backend =
      shared ??
      (backendKind === 'sqlite' ? sqliteBackend({ path: join(dir, 'locks.db') }) : await backendFromUrl(backendKind))
    if (shared === undefined || i === 0) backends.push(backend)
    const metrics = createMetrics()
    const locks = createLocks({ backend, namespace: 'test', onEvent: metrics.onLockEvent })
    const store = await stores.open()
    const app = buildApp({ store: jitter ? jitterStore(store) : store, locks, metrics, lockWaitMs: 10_000 })
    await app.ready()
    instances.push({ app, store, locks })
  }
  return {
    instances,
    async close() {
      for (const { app, locks, store } of instances) {
        await app.close()
        await locks.close()
        await store.close()
      }
      for (const backend of backends) await backend.close()
      await stores.drop()
    },
  }
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
