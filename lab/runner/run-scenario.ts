import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nowMs, sleep } from '../lib/clock.js'
import type { ClientConfig, ClientRequest, RunnerReply } from '../lib/protocol.js'
import { type FaultSpec, Nemesis, planFaults } from './nemesis.js'
import { Referee } from './referee.js'

const LAB = dirname(dirname(fileURLToPath(import.meta.url)))
const CLIENT = join(LAB, 'client', 'client.ts')

/** One run: a strategy on a backend URL, N clients, a fault, fencing on or off at the referee. */
export interface Scenario {
  /** Directory name under lab/results. */
  run: string
  scenario: string
  backend: string
  strategy: string
  url: string
  fencing: boolean
  clients: number
  durationMs: number
  ttlMs: number
  csMs: [number, number]
  fault: FaultSpec
  seed: number
  namespace: string
  /** Kills the lock server and starts it again after `downMs` (server-kill scenarios). */
  restartServer?: (downMs: number) => Promise<void>
}

/** Where a run's histories go. */
export function runDir(run: string): string {
  return join(LAB, 'results', run)
}

/**
 * Runs one scenario: forks the clients, serves the referee and the pause points over IPC, lets the nemesis
 * strike, stops everyone after `durationMs` (resuming paused clients first) and writes `meta.json` with the
 * register's final value. Returns the run's directory.
 */
export async function runScenario(s: Scenario): Promise<string> {
  const dir = runDir(s.run)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const referee = new Referee(join(dir, 'referee.jsonl'), s.fencing)
  const children = new Map<string, ChildProcess>()
  let spawned = 0
  let over = false
  const nemesis = new Nemesis(s.fault, join(dir, 'nemesis.jsonl'), s.restartServer)

  const spawnClient = (): void => {
    spawned += 1
    const proc = `c${spawned}`
    const config: ClientConfig = {
      proc,
      historyPath: join(dir, `${proc}.jsonl`),
      strategy: s.strategy,
      url: s.url,
      lockName: 'resource',
      namespace: s.namespace,
      ttlMs: s.ttlMs,
      csMs: s.csMs,
      seed: s.seed * 100 + spawned,
    }
    const child = fork(CLIENT, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
    children.set(proc, child)
    child.on('message', (message: ClientRequest) => void serve(proc, child, message))
    child.once('exit', (code, signal) => {
      children.delete(proc)
      referee.exit(proc, 'died')
      // A client killed by the nemesis is replaced, so the run keeps its N contenders.
      if (signal === 'SIGKILL' && !over) setTimeout(spawnClient, 200)
      else if (code !== 0 && !over) process.stderr.write(`lab: client ${proc} exited with ${code ?? signal}\n`)
    })
  }

  const serve = async (proc: string, child: ChildProcess, m: ClientRequest): Promise<void> => {
    const reply = (r: Omit<RunnerReply, 'id'>): void => {
      if (child.connected) child.send({ ...r, id: m.id })
    }
    if (m.kind === 'read') {
      const { accepted, value } = await referee.read(proc, m.token)
      if (nemesis.strike('enter', proc, child) && s.fault.kind === 'kill') return
      reply({ accepted, value })
    } else if (m.kind === 'write') {
      reply({ accepted: await referee.write(proc, m.token, m.value) })
    } else if (m.kind === 'exit') {
      referee.exit(proc)
      reply({ accepted: true })
    } else {
      if (nemesis.strike(m.name, proc, child) && s.fault.kind === 'kill') return
      reply({ accepted: true })
    }
  }

  const started = nowMs()
  for (let i = 0; i < s.clients; i++) spawnClient()
  const faults = nemesis.run(planFaults(s.fault, s.seed, s.durationMs))
  await sleep(s.durationMs)
  over = true
  nemesis.stop()
  await faults
  await stopAll(children)
  writeFileSync(
    join(dir, 'meta.json'),
    `${JSON.stringify({ ...s, restartServer: undefined, startedAt: started, endedAt: nowMs(), finalValue: referee.current, spawned }, null, 2)}\n`,
  )
  return dir
}

/** Resumes every client (one may be paused), asks it to stop, and kills what is left after a grace period. */
async function stopAll(children: Map<string, ChildProcess>): Promise<void> {
  const exits = [...children.values()].map((child) => {
    child.kill('SIGCONT')
    if (child.connected) child.send({ kind: 'stop' })
    return new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('exit', () => resolve())
    })
  })
  const timeout = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL')
  }, 12_000)
  await Promise.all(exits)
  clearTimeout(timeout)
}
