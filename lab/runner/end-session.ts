import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * T8: the lock server ends a client's session while the client is paused (an operator's KILL, an idle-session
 * timeout, a lease revoked by an admin). Each function finds the sessions of one client process and ends them on
 * the server side only, and returns what it did, for the nemesis history.
 *
 * The SQL servers and Redis name a session by the client's TCP address, so a client's sessions are found from its
 * process id: the local ports of its established connections to the server's port (`ss -p`). Nothing else on the
 * server is touched (the shared MariaDB and PostgreSQL serve other users).
 */

/** What a client process reports about its lock session that the server does not show (ZooKeeper's password). */
export interface SessionInfo {
  zkSessionId?: string
  zkPassword?: string
}

/** The local ports of `pid`'s established TCP connections to 127.0.0.1:`serverPort`. */
export async function clientPorts(pid: number, serverPort: number): Promise<number[]> {
  const { stdout } = await run('ss', ['-Htnp', 'state', 'established', `( dport = :${serverPort} )`])
  const ports: number[] = []
  for (const line of stdout.split('\n')) {
    if (!line.includes(`pid=${pid},`)) continue
    // Columns: Recv-Q Send-Q Local:Port Peer:Port Process
    const local = line.trim().split(/\s+/)[2] ?? ''
    const port = Number(local.slice(local.lastIndexOf(':') + 1))
    if (Number.isInteger(port) && port > 0) ports.push(port)
  }
  return ports
}

const portOf = (url: string): number => Number(new URL(url).port)

/** MariaDB: `KILL CONNECTION` of every session of `pid` (GET_LOCK locks die with their session). */
export async function killMariadbSessions(url: string, pid: number): Promise<string> {
  const ports = await clientPorts(pid, portOf(url))
  if (ports.length === 0) return 'no connection found'
  const mysql = await import('mysql2/promise')
  const admin = await mysql.createConnection(url.split('?')[0]!)
  try {
    const [rows] = await admin.query('SELECT ID, HOST FROM information_schema.PROCESSLIST')
    const ids = (rows as { ID: number; HOST: string }[])
      .filter((r) => /^(localhost|127\.0\.0\.1):\d+$/.test(r.HOST) && ports.includes(Number(r.HOST.split(':')[1])))
      .map((r) => r.ID)
    for (const id of ids) await admin.query(`KILL CONNECTION ${Number(id)}`)
    return `KILL CONNECTION ${ids.join(', ')}`
  } finally {
    await admin.end()
  }
}

/** PostgreSQL: `pg_terminate_backend` of every backend serving `pid` (advisory locks die with it). */
export async function terminatePostgresBackends(url: string, pid: number): Promise<string> {
  const ports = await clientPorts(pid, portOf(url))
  if (ports.length === 0) return 'no connection found'
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: url.split('?')[0] })
  await admin.connect()
  try {
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_addr = '127.0.0.1' AND client_port = ANY($1::int[])",
      [ports],
    )
    return `pg_terminate_backend ${rows.map((r) => r.pid).join(', ')}`
  } finally {
    await admin.end()
  }
}

/** Redis: `CLIENT KILL ADDR` of every connection of `pid` (a Redis lock is a key with a TTL: it stays). */
export async function killRedisClients(url: string, pid: number): Promise<string> {
  const port = portOf(url)
  const ports = await clientPorts(pid, port)
  for (const p of ports) {
    await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'CLIENT', 'KILL', 'ADDR', `127.0.0.1:${p}`])
  }
  return ports.length === 0 ? 'no connection found' : `CLIENT KILL ADDR 127.0.0.1:${ports.join(', :')}`
}

/**
 * etcd: revokes the lease of the lock's holder, the key under the run's prefix with the lowest create revision
 * (etcd names no client; the nemesis strikes a client that was just granted the lock, so it holds that key).
 */
export async function revokeHolderLease(hosts: string, prefix: string): Promise<string> {
  const { Etcd3 } = await import('etcd3')
  const client = new Etcd3({ hosts: hosts.split(',').map((h) => `http://${h}`) })
  try {
    const { kvs } = await client.kv.range({
      key: Buffer.from(prefix),
      range_end: prefixEnd(Buffer.from(prefix)),
    })
    const leased = kvs.filter((kv) => kv.lease !== '0')
    leased.sort((a, b) => Number(BigInt(a.create_revision) - BigInt(b.create_revision)))
    const holder = leased[0]
    if (holder === undefined) return 'no leased key found'
    await client.leaseClient.leaseRevoke({ ID: holder.lease })
    return `lease revoke ${BigInt(holder.lease).toString(16)} (key ${holder.key.toString()})`
  } finally {
    client.close()
  }
}

function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  end[end.length - 1] = (end[end.length - 1] ?? 0) + 1
  return end
}

/**
 * ZooKeeper: closes the client's session from a second connection that resumes it with the session id and
 * password the client reported (the way ZooKeeper's own tests expire a session); the server deletes its
 * ephemeral nodes at once, so the lock passes to the next waiter.
 */
export async function closeZkSession(hosts: string, session: SessionInfo | undefined): Promise<string> {
  if (session?.zkSessionId === undefined || session.zkPassword === undefined) return 'no session reported'
  const { default: zookeeper } = await import('node-zookeeper-client')
  const options = {
    sessionTimeout: 4_000,
    sessionId: Buffer.from(session.zkSessionId, 'hex'),
    sessionPassword: Buffer.from(session.zkPassword, 'hex'),
  }
  const client = zookeeper.createClient(hosts, options as Parameters<typeof zookeeper.createClient>[1])
  const state = await new Promise<string>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), 5_000)
    client.once('connected', () => {
      clearTimeout(timer)
      resolve('connected')
    })
    client.once('expired', () => {
      clearTimeout(timer)
      resolve('expired')
    })
    client.connect()
  })
  client.close()
  return `close session 0x${session.zkSessionId} (${state})`
}
