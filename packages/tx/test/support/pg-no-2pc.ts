/**
 * A throwaway PostgreSQL cluster with two-phase commit off (`max_prepared_transactions = 0`, PostgreSQL's
 * default), for the capability-check test: `initdb` into `<repo>/.data/pg-no-2pc-<random>/`, started with
 * `pg_ctl` on a free loopback port, removed by `stop()`. The shared server on 5432 has 2PC on, so it cannot
 * show the error. Runs the server as the `postgres` user when the tests run as root (initdb refuses root).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('../../../../', import.meta.url))

function binDir(): string {
  const given = process.env.LATCHKEY_PG_BINDIR
  if (given !== undefined) return given
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b))
  const dir = `/usr/lib/postgresql/${versions.at(-1)}/bin`
  if (!existsSync(join(dir, 'initdb'))) throw new Error(`no initdb in ${dir}; set LATCHKEY_PG_BINDIR`)
  return dir
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const address = s.address()
      s.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      )
    })
  })
}

export interface ThrowawayPostgres {
  readonly url: string
  stop(): void
}

export async function startPostgresWithout2pc(): Promise<ThrowawayPostgres> {
  const bin = binDir()
  const dir = join(repo, '.data', `pg-no-2pc-${randomBytes(3).toString('hex')}`)
  mkdirSync(dir, { recursive: true })
  const asRoot = process.getuid?.() === 0
  const uid = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString()) : undefined
  if (uid !== undefined) chownSync(dir, uid, Number(execFileSync('id', ['-g', 'postgres']).toString()))
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, cmd), args, { stdio: 'pipe' })
  const data = join(dir, 'data')
  const port = await freePort()
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_prepared_transactions=0 -c fsync=off`
  run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start'])
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
