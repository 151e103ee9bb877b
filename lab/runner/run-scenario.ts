import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nowMs, sleep } from '../lib/clock.js'
import { appendRelayed, RELAY_ENV, type RelayedEvent } from '../lib/history.js'
import type { ClientConfig, ClientRequest, Ping, Pong, RunnerReply } from '../lib/protocol.js'
import type { SessionInfo } from './end-session.js'
import { FakeClock } from './fake-clock.js'
import { type FaultProxy, proxiedUrl } from './fault-proxy.js'
import { type FaultSpec, planFaults, slowedClient } from './fault-spec.js'
import { type MajorityPhase, Nemesis } from './nemesis.js'
import { Referee } from './referee.js'
import type { FaultHooks } from './target.js'

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
const NETWORK_FAULTS = new Set(['partition', 'stall-reply', 'majority-split'])

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
    splitMajorities: (phase) => {
      for (const [proc, list] of proxies) {
        for (const [node, proxy] of list.entries()) proxy.set(majorityMode(proc, node, phase))
      }
    },
  })
  // Round trips of pings to clients whose events the runner stamps (T17b): the bound of a stamp's delay.
  const pingRtts: number[] = []
  const pingsSent = new Map<number, number>()
  let pingId = 0
  // The clients whose events the runner stamps, once they have sent one (up and listening: a ping queued while a
  // client still loads its modules would measure its start-up).
  const relaying = new Set<string>()
  // Writes the nemesis holds in flight (delay-write); the run waits for them to land before it is judged.
  const inFlight = new Set<Promise<void>>()
  // The first clients' start-up (loading their modules, opening the backend: seconds when the machine is busy)
  // comes before the measured window, so that a run gets its `durationMs` of clients at work: each is counted once
  // it sends its first request, or exits before that.
  const starting = new Set<string>()
  let allStarted = (): void => undefined
  const started = new Promise<void>((resolve) => {
    allStarted = resolve
  })
  const isUp = (proc: string): void => {
    if (starting.delete(proc) && starting.size === 0) allStarted()
  }

  /** Forks the next client; its name (`c1`, `c2`, ...). */
  const spawnClient = async (): Promise<string> => {
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
    if (s.fault.clientClockRate !== undefined && slowedClient(s.fault, proc)) {
      // Slowed monotonic clock too: the client's events are sent to the runner, which stamps them on the real one.
      const clock = new FakeClock(join(dir, `${proc}.clock`), s.fault.clientClockRate, true, 1)
      env = { ...env, ...clock.env(), [RELAY_ENV]: '1' }
    } else if (s.fault.kind === 'client-clock-jump') {
      // Cached for a second: re-read on every call, the clock file slows a client's start-up threefold.
      const clock = new FakeClock(join(dir, `${proc}.clock`), undefined, false, 1)
      clocks.set(proc, clock)
      env = { ...env, ...clock.env() }
    }
    const child = fork(CLIENT, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: 'inherit', env })
    children.set(proc, child)
    const history = join(dir, `${proc}.jsonl`)
    child.on('message', (message: ClientRequest | RelayedEvent | Pong) => {
      isUp(proc)
      if (message.kind === 'history') {
        appendRelayed(history, message)
        relaying.add(proc)
      } else if (message.kind === 'pong') {
        const sent = pingsSent.get(message.id)
        pingsSent.delete(message.id)
        if (sent !== undefined) pingRtts.push(nowMs() - sent)
      } else void serve(proc, child, message)
    })
    child.once('exit', (code, signal) => {
      isUp(proc)
      children.delete(proc)
      referee.exit(proc, 'died')
      for (const proxy of proxies.get(proc) ?? []) void proxy.close()
      // A client killed by the nemesis is replaced, so the run keeps its N contenders.
      if (signal === 'SIGKILL' && !over) setTimeout(() => void spawnClient(), 200)
      else if (code !== 0 && !over) process.stderr.write(`lab: client ${proc} exited with ${code ?? signal}\n`)
    })
    return proc
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
        ...(fault === undefined ? {} : faultOnEnter(nemesis.kind, s.fault.workMs ?? fault.durationMs)),
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

  // The run's start (its timeline's left edge) is the first spawn; the measured window starts with every client up.
  const startedAt = nowMs()
  // Added once forked: its first message or exit is an event, which comes after this continuation.
  for (let i = 0; i < s.clients; i++) starting.add(await spawnClient())
  if (starting.size === 0) allStarted()
  // Bounded: a client stuck before its first request (a connect that never ends) must not hang the run; the
  // window then starts without it, as it did before it waited for the clients at all.
  const startLimitMs = Math.max(30_000, 3 * s.durationMs)
  let limit: NodeJS.Timeout | undefined
  await Promise.race([started, new Promise<void>((resolve) => (limit = setTimeout(resolve, startLimitMs)))])
  clearTimeout(limit)
  if (starting.size > 0) {
    process.stderr.write(
      `lab: ${s.run}: ${[...starting].join(', ')} not up after ${startLimitMs} ms; the window starts\n`,
    )
  }
  const faults = nemesis.run(planFaults(s.fault, s.seed, s.durationMs))
  const pinging =
    s.fault.clientClockRate === undefined
      ? undefined
      : setInterval(() => {
          for (const [proc, child] of children) {
            if (!relaying.has(proc)) continue
            pingId += 1
            pingsSent.set(pingId, nowMs())
            if (child.connected) child.send({ kind: 'ping', id: pingId } satisfies Ping)
          }
        }, 100)
  await sleep(s.durationMs)
  clearInterval(pinging)
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
    `${JSON.stringify({ ...s, restartServer: undefined, pauseServer: undefined, endSession: undefined, partitionCluster: undefined, onFollower: undefined, jumpServerClock: undefined, failover: undefined, clientEnv: undefined, startedAt, endedAt: nowMs(), finalValue: referee.current, spawned, ...(pingRtts.length === 0 ? {} : { stampRttMs: rttStats(pingRtts) }) }, null, 2)}\n`,
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
    kind === 'failover' ||
    kind === 'majority-split'
  )
    return { workMs: durationMs }
  return {}
}

/** p50, p99 and max of the runner's ping round trips to the clients (ms, rounded to 0.01). */
function rttStats(rtts: number[]): { p50: number; p99: number; max: number; n: number } {
  const sorted = [...rtts].sort((a, b) => a - b)
  const at = (q: number): number =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100
  return { p50: at(0.5), p99: at(0.99), max: at(1), n: sorted.length }
}

/**
 * A `majority-split`'s mode for client `proc`'s proxy to RedLock node `node` (0-4, in the URL's order): odd-numbered
 * clients reach nodes 1-3 (0-2) and even-numbered ones nodes 3-5 (2-4), the sides swapped once the cut has moved.
 * Node 3 is on both sides, so the two majorities intersect.
 */
function majorityMode(proc: string, node: number, phase: MajorityPhase): 'pass' | 'stall-both' {
  if (phase === 'heal') return 'pass'
  const odd = Number(proc.slice(1)) % 2 === 1
  const low = odd === (phase === 'split')
  const reachable = low ? node <= 2 : node >= 2
  return reachable ? 'pass' : 'stall-both'
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
