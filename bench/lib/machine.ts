/**
 * The report's header: the machine, the date, and the version of everything measured.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { peerVersions } from '../redis-peers.js'
import type { Servers } from './catalog.js'

const require = createRequire(import.meta.url)

/** Machine and versions. */
export interface MachineInfo {
  readonly date: string
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly kernel: string
  readonly node: string
  readonly commit: string
  readonly loadAtStart: string
  readonly versions: Record<string, string>
}

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim()
  } catch {
    return 'n/a'
  }
}

function pkg(name: string): string {
  try {
    return (require(`${name}/package.json`) as { version: string }).version
  } catch {
    return 'n/a'
  }
}

const safe = async (f: () => Promise<string>): Promise<string> => f().catch(() => 'n/a')

async function serverVersions(s: Servers): Promise<Record<string, string>> {
  const zk = run('bash', ['-c', `exec 3<>/dev/tcp/${s.zk.replace(':', '/')} && printf srvr >&3 && cat <&3`])
  return {
    'redis-server': /v=([\d.]+)/.exec(run('redis-server', ['--version']))?.[1] ?? 'n/a',
    MariaDB: await safe(async () => {
      const c = await mysql.createConnection(s.mysql)
      const [rows] = await c.query('SELECT VERSION() AS v')
      await c.end()
      return String((rows as { v: string }[])[0]?.v)
    }),
    PostgreSQL: await safe(async () => {
      const c = new pg.Client({ connectionString: s.postgres })
      await c.connect()
      const r = await c.query('SHOW server_version')
      await c.end()
      return String(r.rows[0]?.server_version)
    }),
    ZooKeeper: /version: ([\d.]+)/.exec(zk)?.[1] ?? 'n/a',
    etcd: await safe(async () => {
      const c = new Etcd3({ hosts: s.etcd })
      const st = await c.maintenance.status()
      c.close()
      return st.version
    }),
  }
}

/** Everything the header shows. */
export async function machineInfo(s: Servers): Promise<MachineInfo> {
  const head = run('git', ['rev-parse', '--short', 'HEAD'])
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const status = run('git', ['-C', root, 'status', '--porcelain', '--', 'packages', 'apps'])
  const dirty = status === 'n/a' || status.length > 0
  const rootPackage = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    name: string
  }
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    commit: `${head}${dirty ? ' (with uncommitted changes in packages/ or apps/)' : ''}`,
    loadAtStart: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    versions: {
      [rootPackage.name]: 'this checkout',
      ioredis: pkg('ioredis'),
      ...peerVersions(),
      ...(await serverVersions(s)),
    },
  }
}
