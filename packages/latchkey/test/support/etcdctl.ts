/**
 * Runs Debian's `etcdctl` (Go's `concurrency.Mutex` behind `etcdctl lock`) as a child process for the etcd-layout
 * interop tests. `ensureEtcdctl()` installs it through `scripts/servers/etcd.sh install-etcdctl` when it is missing,
 * so the tests run instead of being skipped.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { ETCD_URL } from './etcd-backend-module.js'

const run = promisify(execFile)
const script = fileURLToPath(new URL('../../../../scripts/servers/etcd.sh', import.meta.url))

/** Installs etcdctl (Debian `etcd-client`) when it is not on PATH; idempotent. */
export async function ensureEtcdctl(): Promise<void> {
  await run('bash', [script, 'install-etcdctl'], { timeout: 600_000 })
}

/** One `etcdctl lock` process: what it printed so far, and its exit. */
export interface LockProcess {
  readonly child: ChildProcess
  /** Everything written to stdout so far. */
  stdout(): string
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>
  /** Whether the process has exited. */
  hasExited(): boolean
  /** SIGTERM: etcdctl unlocks (Go's `Mutex.Unlock`) and exits. */
  stop(): void
}

/**
 * `etcdctl lock <name> [-- command...]`: with a command, Go holds the lock while the command runs (with
 * `ETCD_LOCK_KEY` / `ETCD_LOCK_REV` in its environment); without one, etcdctl prints its key and holds until SIGTERM.
 */
export function etcdctlLock(name: string, command: readonly string[] = []): LockProcess {
  const args = ['--endpoints', ETCD_URL, 'lock', name, ...(command.length > 0 ? ['--', ...command] : [])]
  const child = spawn('etcdctl', args, { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  let done = false
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  const exited = new Promise<number | string>((resolve, reject) => {
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      done = true
      if (code !== 0 && err !== '') process.stderr.write(`etcdctl lock ${name}: ${err}`)
      resolve(code ?? signal ?? 'unknown')
    })
  })
  return {
    child,
    stdout: () => out,
    exited,
    hasExited: () => done,
    stop: () => {
      if (!done) child.kill('SIGTERM')
    },
  }
}
