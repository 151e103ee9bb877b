import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nowMs, sleep } from '../lib/clock.js'
import type { ClientConfig, ClientRequest, RunnerReply } from '../lib/protocol.js'
import type { SessionInfo } from './end-session.js'
import { FakeClock } from './fake-clock.js'
import { type FaultProxy, proxiedUrl } from './fault-proxy.js'
import { type FaultSpec, Nemesis, planFaults } from './nemesis.js'
import { Referee } from './referee.js'
import type { FaultHooks } from './targets.js'

const LAB = dirname(dirname(fileURLToPath(import.meta.url)))
const CLIENT = join(LAB, 'client', 'client.ts')

/** One run: a strategy on a backend URL, N clients, a fault, fencing on or off at the referee. */
export interface Scenario extends FaultHooks {
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
}

/** Faults that need each client's traffic to the lock service to go through proxies of its own. */
const NETWORK_FAULTS = new Set(['partition', 'stall-reply'])

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
  const proxies = new Map<string, FaultProxy[]>()
  // What each client last said about its lock session (ZooKeeper's id and password: the server shows no password).
  const sessions = new Map<string, SessionInfo>()
  const { endSession } = s
  // Client clock faults: each client on a fake wall clock of its own, so a step strikes one process only.
  const clocks = new Map<string, FakeClock>()
  const nemesis = new Nemesis(s.fault, join(dir, 'nemesis.jsonl'), {
    ...(s.restartServer === undefined ? {} : { restartServer: s.restartServer }),
    ...(s.pauseServer === undefined ? {} : { pauseServer: s.pauseServer }),
    ...(endSession === undefined ? {} : { endSession: (proc, pid) => endSession(pid, sessions.get(proc)) }),
    ...(s.partitionCluster === undefined ? {} : { partitionCluster: s.partitionCluster }),
    ...(s.onFollower === undefined ? {} : { onFollower: s.onFollower }),
    ...(s.jumpServerClock === undefined ? {} : { jumpServerClock: s.jumpServerClock }),
    ...(s.failover === undefined ? {} : { failover: s.failover }),
    network: (proc, mode) => {
      for (const proxy of proxies.get(proc) ?? []) proxy.set(mode)
    },
    jumpClientClock: (proc, ms) => clocks.get(proc)?.jump(ms),
  })
  // Writes the nemesis holds in flight (delay-write); the run waits for them to land before it is judged.
  const inFlight = new Set<Promise<void>>()

  const spawnClient = async (): Promise<void> => {
    spawned += 1
    const proc = `c${spawned}`
    let url = s.url
    if (NETWORK_FAULTS.has(s.fault.kind)) {
      const proxied = await proxiedUrl(s.url)
      if (proxied.proxies.length === 0) throw new TypeError(`lab: ${s.backend} has no network to fault`)
      proxies.set(proc, proxied.proxies)
      url = proxied.url
    }
    const config: ClientConfig = {
      proc,
      historyPath: join(dir, `${proc}.jsonl`),
      strategy: s.strategy,
      url,
      lockName: 'resource',
      namespace: s.namespace,
      ttlMs: s.ttlMs,
      csMs: s.csMs,
      seed: s.seed * 100 + spawned,
    }
    let env: NodeJS.ProcessEnv = { ...process.env, ...s.clientEnv }
    if (s.fault.kind === 'client-clock-jump') {
      // Cached for a second: re-read on every call, the clock file slows a client's start-up threefold.
      const clock = new FakeClock(join(dir, `${proc}.clock`), undefined, false, 1)
      clocks.set(proc, clock)
      env = { ...env, ...clock.env() }
    }
    const child = fork(CLIENT, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: 'inherit', env })
    children.set(proc, child)
    child.on('message', (message: ClientRequest) => void serve(proc, child, message))
    child.once('exit', (code, signal) => {
      children.delete(proc)
      referee.exit(proc, 'died')
      for (const proxy of proxies.get(proc) ?? []) void proxy.close()
      // A client killed by the nemesis is replaced, so the run keeps its N contenders.
      if (signal === 'SIGKILL' && !over) setTimeout(() => void spawnClient(), 200)
      else if (code !== 0 && !over) process.stderr.write(`lab: client ${proc} exited with ${code ?? signal}\n`)
    })
  }

  const serve = async (proc: string, child: ChildProcess, m: ClientRequest): Promise<void> => {
    const reply = (r: Omit<RunnerReply, 'id'>): void => {
      if (child.connected) child.send({ ...r, id: m.id })
    }
    if (m.kind === 'read') {
      if (m.session !== undefined) sessions.set(proc, m.session)
      const { accepted, value } = await referee.read(proc, m.token)
      const fault = await nemesis.strikeEligible('enter', proc, child)
      if (fault !== undefined && nemesis.kind === 'kill') return
      reply({
        accepted,
        value,
        ...(fault === undefined ? {} : faultOnEnter(nemesis.kind, fault.durationMs)),
      })
    } else if (m.kind === 'write') {
      const fault = nemesis.strike('write', proc, child)
      if (fault !== undefined) {
        // Held in flight: the client's request times out and it moves on; the write lands later, stale.
        const landing = sleep(fault.durationMs).then(async () => void (await referee.write(proc, m.token, m.value)))
        inFlight.add(landing)
        void landing.finally(() => inFlight.delete(landing))
        return
      }
      reply({ accepted: await referee.write(proc, m.token, m.value) })
    } else if (m.kind === 'exit') {
      referee.exit(proc)
      reply({ accepted: true })
    } else {
      if (nemesis.strike(m.name, proc, child) !== undefined && nemesis.kind === 'kill') return
      reply({ accepted: true })
    }
  }

  const started = nowMs()
  for (let i = 0; i < s.clients; i++) await spawnClient()
  const faults = nemesis.run(planFaults(s.fault, s.seed, s.durationMs))
  await sleep(s.durationMs)
  over = true
  nemesis.stop()
  await faults
  // A partition still in force is healed, so the clients can say goodbye to the lock service.
  for (const list of proxies.values()) for (const proxy of list) proxy.set('pass')
  await stopAll(children)
  await Promise.all(inFlight)
  for (const list of proxies.values()) for (const proxy of list) await proxy.close()
  writeFileSync(
    join(dir, 'meta.json'),
    `${JSON.stringify({ ...s, restartServer: undefined, pauseServer: undefined, endSession: undefined, partitionCluster: undefined, onFollower: undefined, jumpServerClock: undefined, failover: undefined, clientEnv: undefined, startedAt: started, endedAt: nowMs(), finalValue: referee.current, spawned }, null, 2)}\n`,
  )
  return dir
}

/**
 * What a fault striking at `enter` asks of the client: a starved event loop blocks itself; a holder cut off from
 * the lock service, or whose lock server froze, keeps working as long as the fault lasts (a job longer than the
 * lease), so the fault meets a holder that is still inside; so does one whose server's clock is about to step
 * (for as long as the step: it is still inside, its watchdog renewing, when its lock expires early), and one whose
 * Redis primary fails over (it is still inside when its lock turns out missing on the promoted replica).
 */
function faultOnEnter(kind: FaultSpec['kind'], durationMs: number): { starveMs?: number; workMs?: number } {
  if (kind === 'starve') return { starveMs: durationMs }
  if (
    kind === 'partition' ||
    kind === 'server-pause' ||
    kind === 'cluster-partition' ||
    kind === 'server-clock-jump' ||
    kind === 'failover'
  )
    return { workMs: durationMs }
  return {}
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
