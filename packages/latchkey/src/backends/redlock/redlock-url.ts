/**
 * `redlock://h1:p1,h2:p2,h3:p3[/db][?quorum=3&driftFactor=0.01&nodeTimeoutMs=50]`: one ioredis client per
 * master, opened here (ioredis is imported only now, never at module load) and closed by the backend's `close()`.
 */
import type { Backend } from '../../backend/types.js'
import type { RedlockBackendOptions } from './index.js'

/** The parts of a `redlock://` URL. */
export interface RedlockUrl {
  readonly nodes: readonly { readonly host: string; readonly port: number }[]
  readonly db: number
  readonly options: Omit<RedlockBackendOptions, 'clients'>
}

const NUMERIC = ['quorum', 'driftFactor', 'nodeTimeoutMs'] as const

/** Parses a `redlock://` URL; throws `RangeError` naming what is wrong. */
export function parseRedlockUrl(url: string): RedlockUrl {
  const match = /^redlock:\/\/([^/?#]+)(?:\/(\d+))?\/?(?:\?([^#]*))?$/i.exec(url)
  if (match === null) {
    throw new RangeError(
      `latchkey: a redlock URL looks like redlock://h1:6381,h2:6382,h3:6383, received ${JSON.stringify(url)}`,
    )
  }
  const nodes = (match[1] ?? '').split(',').map((hostPort) => {
    const at = hostPort.lastIndexOf(':')
    const host = at > 0 ? hostPort.slice(0, at) : hostPort
    const port = at > 0 ? Number(hostPort.slice(at + 1)) : 6379
    if (host.length === 0 || !Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new RangeError(`latchkey: bad node ${JSON.stringify(hostPort)} in redlock URL ${JSON.stringify(url)}`)
    }
    return { host: host.replace(/^\[(.*)\]$/, '$1'), port }
  })
  const options: Record<string, number> = {}
  for (const [name, value] of new URLSearchParams(match[3] ?? '')) {
    if (!(NUMERIC as readonly string[]).includes(name)) {
      throw new RangeError(`latchkey: unknown redlock URL option ${JSON.stringify(name)}; known: ${NUMERIC.join(', ')}`)
    }
    options[name] = Number(value)
  }
  return { nodes, db: Number(match[2] ?? 0), options }
}

/**
 * Opens a RedLock backend from a URL (for `backendFromUrl`). The backend owns its clients.
 *
 * @example
 * const backend = await openRedlockBackend('redlock://127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383')
 */
export async function openRedlockBackend(url: string): Promise<Backend> {
  const parsed = parseRedlockUrl(url)
  const { Redis } = await import('ioredis')
  const { redlockBackend } = await import('./index.js')
  const clients = parsed.nodes.map(({ host, port }) => {
    // maxRetriesPerRequest 0: a command caught by a dropped connection fails instead of being re-sent later.
    const client = new Redis({ host, port, db: parsed.db, maxRetriesPerRequest: 0 })
    client.on('error', () => undefined) // node failures surface as QuorumNotReachedError outcomes
    return client
  })
  let backend: Backend
  try {
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
