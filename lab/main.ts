/**
 * The safety lab: `npm run lab` runs every scenario against every latchkey backend (fencing off and on) and the
 * naive algorithms, then writes lab/RESULTS.md. `npm run lab -- --smoke` runs one short scenario per backend.
 * Options: `--only <text>[,<text>...]` (runs whose name contains one of them), `--seeds <n>` (default 1),
 * `--no-naive`, `--report-only` (re-check the stored runs and rewrite the report). The smoke runs 3 at a time
 * (LAB_PARALLEL=n to change it). The report keeps the earlier
 * RESULTS.md's cells that no run at hand replaces (see previous-report.ts).
 */
import { randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { checkRun, formatSummary, type RunSummary } from './checker/summarize.js'
import { NAIVE } from './naive-scenarios.js'
import { writeResults } from './report.js'
import type { FaultSpec } from './runner/fault-spec.js'
import { stopLabServers } from './runner/lab-servers.js'
import { removeZkTree } from './runner/lock-cleanup.js'
import { NETNS_PREFIX } from './runner/netns-clusters.js'
import { runDir, runScenario } from './runner/run-scenario.js'
import { SHARED_ZK_HOSTS } from './runner/shared-servers.js'
import type { Prepared } from './runner/target.js'
import { probe, TARGETS } from './runner/targets.js'
import { SCENARIOS } from './scenarios.js'

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    only: { type: 'string' },
    seeds: { type: 'string', default: '1' },
    'no-naive': { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
  },
})
const smoke = values.smoke === true
const ttlMs = smoke ? 1_000 : 2_000
const durationMs = smoke ? 9_000 : 20_000
const csMs: [number, number] = smoke ? [20, 200] : [50, 500]
const seeds = Number(values.seeds)
const LAB = import.meta.dirname
/** Where the lab's own servers keep their data (LAB_DATA_DIR, else lab/.data). */
const DATA = process.env.LAB_DATA_DIR ?? join(LAB, '.data')

interface Planned {
  run: string
  scenario: string
  backend: string
  strategy: string
  fencing: boolean
  seed: number
  fault: FaultSpec
  prepare: (namespace: string) => Promise<Prepared>
}

/** Inside the clients' namespace of lab/netns.sh (which sets LAB_IN_NETNS): the T9 runs, and only them. */
const inNetns = NETNS_PREFIX !== undefined
if (!inNetns && !smoke) {
  console.log(
    'lab: T9 (a partition inside the lock cluster) runs apart: bash lab/netns.sh up && bash lab/netns.sh run npm run lab -- --only T9',
  )
}
const planned: Planned[] = []
const prefix = smoke ? 'smoke-' : ''
for (const seed of Array.from({ length: seeds }, (_, i) => i + 1)) {
  for (const target of Object.values(TARGETS)) {
    // The AOF variants and the three-member clusters differ from the single servers only when a server fails:
    // they run the server scenarios (and the baseline) alone.
    const aofVariant = target.name.startsWith('redis-aof')
    const serverVariant = aofVariant || target.name.endsWith('-3')
    // The smoke keeps to one server per engine: the AOF variants and the three-member clusters stay out of it.
    if (smoke && (aofVariant || target.name.endsWith('-3'))) continue
    const scenarios = (smoke ? SCENARIOS.filter((d) => d.id === 'T3') : SCENARIOS).filter(
      (d) =>
        (d.needs !== 'server' || target.restartable) &&
        (d.needs !== 'network' || target.networked) &&
        (d.needs !== 'session' || target.endsSessions) &&
        (d.backends === undefined || d.backends.includes(target.name)) &&
        // T9 runs only inside lab/netns.sh's namespaces, and there only T9 can run (the shared servers are outside).
        (d.needs === 'partition') === inNetns &&
        (d.needs !== 'partition' || target.partitionable === true) &&
        (d.needs !== 'power-loss' || target.losesPower === true) &&
        (!serverVariant ||
          d.needs === 'server' ||
          d.needs === 'partition' ||
          d.needs === 'power-loss' ||
          d.id === 'T1'),
    )
    // A backend without fencing tokens runs with fencing off only: its fence would compare tokens that are all 0.
    const fencings = smoke ? [target.fenced] : target.fenced ? [false, true] : [false]
    for (const def of scenarios) {
      const { setup } = def
      for (const fencing of fencings) {
        planned.push({
          run: `${prefix}${def.id}-${target.name}-fence-${fencing ? 'on' : 'off'}-s${seed}`,
          scenario: def.id,
          backend: target.name,
          strategy: 'latchkey',
          fencing,
          seed,
          fault: def.fault(ttlMs),
          prepare: (ns) => {
            if (setup === undefined) return target.prepare(ns, DATA, def.needs)
            if (target.prepareWith === undefined) throw new TypeError(`lab: ${target.name} has no ${setup.kind} setup`)
            return target.prepareWith(setup, ns, DATA)
          },
        })
      }
    }
  }
  if (smoke || values['no-naive'] === true) continue
  for (const naive of NAIVE) {
    planned.push({
      run: `${naive.scenario}-${naive.strategy}-s${seed}`,
      scenario: naive.scenario,
      backend: naive.server,
      strategy: naive.strategy,
      fencing: false,
      seed,
      fault: naive.fault(ttlMs),
      prepare: async (ns) =>
        naive.server === 'redis'
          ? TARGETS.redis!.prepare(ns, DATA)
          : { url: SHARED_ZK_HOSTS, cleanup: () => removeZkTree(`/${ns}`) },
    })
  }
}

/**
 * What makes a latchkey run fail the lab: with fencing on the resource must never take a stale write nor lose
 * an update (where the backend gives tokens), tokens must never go back, and a run must get work done.
 */
function violations(s: RunSummary): string[] {
  if (s.strategy !== 'latchkey') return []
  const found: string[] = []
  if (s.sections === 0) found.push('no critical section completed')
  // A fault scenario in which no fault struck proves nothing.
  if (s.scenario !== 'T1' && s.faults === 0) found.push('no fault struck')
  // A cell the plan marks U (the fault breaks the fence itself, see ScenarioDef.unsafeOn) measures its regressions
  // and stale writes; they do not fail the run.
  const expectedUnsafe = SCENARIOS.find((d) => d.id === s.scenario)?.unsafeOn?.includes(s.backend) === true
  if (s.tokenRegressions > 0 && !expectedUnsafe) found.push(`${s.tokenRegressions} token regressions`)
  // A backend that hands out no fencing token (RedLock; the session-held advisory and GET_LOCK locks) runs with
  // fencing off only: nothing can save it, so its stale writes are the measured result of the cell. A backend with
  // tokens must show the fence at work, or the checks below would pass vacuously.
  const fenced = TARGETS[s.backend]?.fenced === true && !expectedUnsafe
  if (fenced && s.fencing && s.tokensChecked === 0) found.push('no fencing token checked with fencing on')
  if (fenced && s.fencing && s.staleAccepted > 0) found.push(`${s.staleAccepted} stale writes accepted with fencing on`)
  if (fenced && s.fencing && s.lostUpdates > 0) found.push(`${s.lostUpdates} lost updates with fencing on`)
  return found.map((f) => `${s.run}: ${f}`)
}

const problems: string[] = []
const selected = planned.filter(
  (p) =>
    values['report-only'] !== true &&
    (values.only === undefined || values.only.split(',').some((text) => p.run.includes(text))),
)
if (values['report-only'] === true) {
  // Re-checks every stored run with the current checker before the report is written.
  for (const run of readdirSync(runDir(''))) {
    if (existsSync(join(runDir(run), 'meta.json'))) checkRun(runDir(run))
  }
}
let skipped = 0
/** Prepares one planned run's backend, runs the scenario on it, checks it, and cleans up. */
async function runPlanned(p: Planned): Promise<void> {
  const namespace = `lab-${randomBytes(4).toString('hex')}`
  let prepared: Prepared
  try {
    prepared = await p.prepare(namespace)
    if (p.strategy === 'latchkey') await probe(prepared.url)
  } catch (error) {
    console.log(`${p.run}: skipped, backend not reachable (${String(error).split('\n')[0]})`)
    problems.push(`${p.run}: backend not reachable`)
    skipped += 1
    return
  }
  try {
    const {
      restartServer,
      pauseServer,
      endSession,
      partitionCluster,
      onFollower,
      jumpServerClock,
      clientEnv,
      failover,
    } = prepared
    await runScenario({
      ...p,
      url: prepared.url,
      clients: 5,
      durationMs,
      ttlMs,
      csMs,
      namespace,
      ...(restartServer === undefined ? {} : { restartServer }),
      ...(pauseServer === undefined ? {} : { pauseServer }),
      ...(endSession === undefined ? {} : { endSession }),
      ...(partitionCluster === undefined ? {} : { partitionCluster }),
      ...(onFollower === undefined ? {} : { onFollower }),
      ...(jumpServerClock === undefined ? {} : { jumpServerClock }),
      ...(clientEnv === undefined ? {} : { clientEnv }),
      ...(failover === undefined ? {} : { failover }),
    })
    const summary = checkRun(runDir(p.run))
    console.log(formatSummary(summary))
    problems.push(...violations(summary))
  } finally {
    await prepared.cleanup().catch((error) => console.log(`${p.run}: cleanup failed: ${String(error)}`))
  }
}

/**
 * The smoke's runs go three at a time: each is one T3 run on its own backend (no server is restarted or paused, the
 * private servers it starts have a port each), its clients mostly sleep in their critical sections and pauses, and
 * one at a time they took 9 x 9 s of a test run (three at a time, load 5-8: 55 s instead of 118, one fault struck in
 * every run either way). Full runs strike servers, so they go one at a time.
 */
const PARALLEL = smoke ? Number(process.env.LAB_PARALLEL ?? 3) : 1
if (!Number.isInteger(PARALLEL) || PARALLEL < 1) {
  throw new RangeError(`LAB_PARALLEL must be an integer >= 1, received ${process.env.LAB_PARALLEL}`)
}
const started = Date.now()
console.log(`lab: ${selected.length} runs, ${durationMs / 1000} s each, TTL ${ttlMs} ms`)
try {
  const queue = [...selected]
  // A run that throws is a problem of that run: the others (in flight beside it) finish before the servers stop.
  const worker = async (): Promise<void> => {
    for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
      const run = p.run
      await runPlanned(p).catch((error: unknown) => {
        console.log(`${run}: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
        problems.push(`${run}: failed: ${String(error).split('\n')[0]}`)
      })
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, worker))
} finally {
  await stopLabServers()
}
const seconds = Math.round((Date.now() - started) / 1000)
const args = process.argv.slice(2).join(' ')
// Each invocation that ran something appends a line to the run log; the report quotes the log, so a
// --report-only pass keeps the durations of the runs it reports on.
const log = join(runDir(''), smoke ? 'smoke-invocations.log' : 'invocations.log')
if (selected.length > 0) {
  mkdirSync(runDir(''), { recursive: true })
  appendFileSync(
    log,
    `- \`npm run lab${args === '' ? '' : ` -- ${args}`}\`: ${selected.length - skipped} runs${skipped === 0 ? '' : ` (${skipped} more skipped, backend not reachable)`} in ${seconds} s (TTL ${ttlMs} ms, ${durationMs / 1000} s per run)\n`,
  )
}
const note = `Invocations that produced these runs (pauses 1.5-3x the TTL, 5 clients, 1 seed unless said):\n\n${existsSync(log) ? readFileSync(log, 'utf8') : ''}`
// The smoke's report goes beside its runs: a test run must not rewrite the tracked lab/RESULTS.md.
const report = smoke ? join(runDir(''), 'SMOKE.md') : join(LAB, 'RESULTS.md')
console.log(`\n${writeResults(runDir(''), report, note, smoke)}\n\nlab: ${selected.length} runs in ${seconds} s`)
if (problems.length > 0) {
  console.log(`\nlab: ${problems.length} problems:\n${problems.map((p) => `  ${p}`).join('\n')}`)
  process.exitCode = 1
}
