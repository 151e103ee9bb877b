/**
 * `redlock://h1:p1,h2:p2,h3:p3[/db][?quorum=3&driftFactor=0.01&nodeTimeoutMs=50]`: one ioredis client per
 * master, opened here (ioredis is imported only now, never at module load) and closed by the backend's `close()`.
 */
import type { Redis } from 'ioredis'
import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import {
  checkQueryKeys,
  formatServer,
  numberOption,
  parseHostList,
  rejectFragment,
  requireSlashes,
  shownUrl,
  splitUrl,
} from '../../backend/url-parts.js'
import { guardDatabase } from '../redis/open-redis.js'
import type { RedlockBackendOptions } from './index.js'

/** The parts of a `redlock://` URL. */
export interface RedlockUrl {
  readonly nodes: readonly { readonly host: string; readonly port: number }[]
  readonly db: number
  /** `user:password@` of the URL, used on every node. */
  readonly username: string | undefined
  readonly password: string | undefined
  readonly options: Omit<RedlockBackendOptions, 'clients'>
}

const NUMERIC = ['quorum', 'driftFactor', 'nodeTimeoutMs'] as const

/** Parses a `redlock://[user:password@]h1:p1,h2:p2,h3:p3[/db]` URL; throws `RangeError` naming what is wrong. */
export function parseRedlockUrl(url: string): RedlockUrl {
  const parts = splitUrl(url)
  if (parts.scheme !== 'redlock') {
    throw new RangeError(
      `latchkey: a redlock URL looks like redlock://h1:6381,h2:6382,h3:6383, received ${shownUrl(url)}`,
    )
  }
  requireSlashes(parts, 'redlock://h1:6381,h2:6382,h3:6383', url)
  rejectFragment(parts, url)
  const db = /^\/?$/.test(parts.path) ? '0' : /^\/(\d{1,9})\/?$/.exec(parts.path)?.[1]
  if (db === undefined) {
    throw new RangeError(
      `latchkey: the path of a redlock URL is a database number (redlock://h1:6381,h2:6382/0), received ${JSON.stringify(parts.path)} in ${shownUrl(url)}`,
    )
  }
  checkQueryKeys(parts.query, NUMERIC, 'redlock', url)
  const nodes = parseHostList(parts.hosts, 6379, url)
  const options: Record<string, number> = {}
  for (const name of NUMERIC) {
    const value = numberOption(parts.query, name, name === 'driftFactor' ? 0 : 1, url, name === 'quorum')
    if (value !== undefined) options[name] = value
  }
  const userinfo = parts.userinfo
  const colon = userinfo?.indexOf(':') ?? -1
  let username: string | undefined
  let password: string | undefined
  try {
    username = userinfo === undefined ? undefined : decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon))
    password = userinfo === undefined || colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1))
  } catch {
    throw new RangeError(`latchkey: the user or password is not valid percent-encoding, in ${shownUrl(url)}`)
  }
  return { nodes, db: Number(db), username: username === '' ? undefined : username, password, options }
}

/**
 * Opens a RedLock backend from a URL (for `backendFromUrl`). The backend owns its clients.
 *
 * @example
 * const backend = await openRedlockBackend('redlock://127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383')
 */
export async function openRedlockBackend(url: string): Promise<Backend> {
  const parsed = parseRedlockUrl(url)
  const { Redis } = requirePeer<{ Redis: new (options: object) => Redis }>(
    'ioredis',
    'redlock',
    'ioredis package (5.x): npm install ioredis',
  )
  const { redlockBackend } = await import('./index.js')
  const waits: Promise<void>[] = []
  const clients = parsed.nodes.map(({ host, port }) => {
    // maxRetriesPerRequest 0: a command caught by a dropped connection fails instead of being re-sent later.
    const client = new Redis({
      host,
      port,
      db: parsed.db,
      maxRetriesPerRequest: 0,
      ...(parsed.username === undefined ? {} : { username: parsed.username }),
      ...(parsed.password === undefined ? {} : { password: parsed.password }),
    })
    client.on('error', () => undefined) // node failures surface as QuorumNotReachedError outcomes
    waits.push(guardDatabase(client, parsed.db, `Redis ${formatServer({ host, port })}`, url, 1_000))
    return client
  })
  let backend: Backend
  try {
    await Promise.all(waits)
    backend = redlockBackend({ ...parsed.options, clients })
  } catch (error) {
    for (const c of clients) c.disconnect()
    throw error
  }
  const close = async () => {
    await backend.close()
    for (const c of clients) c.disconnect()
  }
  return Object.assign(Object.create(backend) as Backend, { close })
}
