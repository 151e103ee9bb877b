import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { lagCdfSvg } from './checker/lag-cdf.js'
import type { RunSummary } from './checker/summarize.js'
import { NAIVE } from './naive-scenarios.js'
import { NOT_RUN } from './not-run.js'
import { type PreviousReport, readPreviousReport } from './previous-report.js'
import { TARGETS } from './runner/targets.js'
import { SCENARIOS } from './scenarios.js'

/** Every `summary.json` under `resultsDir`. */
export function readSummaries(resultsDir: string): RunSummary[] {
  if (!existsSync(resultsDir)) return []
  return readdirSync(resultsDir)
    .map((run) => join(resultsDir, run, 'summary.json'))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as RunSummary)
}

const sum = (runs: RunSummary[], pick: (s: RunSummary) => number): number => runs.reduce((n, s) => n + pick(s), 0)

/** A backend without fencing tokens (RedLock, the session-held SQL locks): it has no fencing-on runs. */
const unfenced = (backend: string): boolean => TARGETS[backend]?.fenced === false

/** One matrix cell: overlaps per 1,000 sections (all runs), stale writes accepted with fencing off and on. */
function cell(runs: RunSummary[], backend: string): string {
  if (runs.length === 0) return '–'
  const sections = sum(runs, (s) => s.sections)
  const per1000 = sections === 0 ? 0 : Math.round((sum(runs, (s) => s.overlaps) / sections) * 10_000) / 10
  const off = runs.filter((s) => !s.fencing)
  const on = runs.filter((s) => s.fencing)
  const offText = off.length === 0 ? 'off –' : `off ${sum(off, (s) => s.staleAccepted)}`
  const onText =
    on.length > 0
      ? `on ${sum(on, (s) => s.staleAccepted)} (${sum(on, (s) => s.staleRejected)} rej.)`
      : unfenced(backend)
        ? 'on n/a (no token)'
        : 'on –'
  const unwarned = sum(runs, (s) => s.unwarnedOverlaps ?? 0)
  const unavailable = `unav. ${median(runs.map((s) => s.unavailableP50Ms))}/${Math.max(0, ...runs.map((s) => s.unavailableMaxMs))} ms`
  return `${per1000} (${unwarned} unwarned) · ${offText} · ${onText} · ${unavailable} · n=${runs.length}`
}

function median(values: number[]): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/**
 * T18 (a zombie release or renewal) needs no fault of its own: in every T2 run the paused holder wakes up after
 * its successor was granted the lock and calls release() and renews. Had either touched the successor's lock, a
 * third client would have entered while the successor was inside: an overlap in which nobody was paused ("clean").
 */
function zombieRow(latchkey: RunSummary[], backends: string[], previous: PreviousReport, carried: Set<string>): string {
  const cells = backends.map((b) => {
    const runs = latchkey.filter((s) => s.scenario === 'T2' && s.backend === b)
    if (runs.length === 0) return carry(previous, carried, 'T18', b)
    return `${sum(runs, (s) => s.cleanOverlaps ?? 0)} overlaps without a paused client, over ${sum(runs, (s) => s.faults)} zombie holders · n=${runs.length}`
  })
  return `| T18 zombie release/renewal after a successor took the lock (from the T2 runs) | ${cells.join(' | ')} |`
}

/** The earlier report's cell for a scenario and backend ('–' if none); records that it was carried over. */
function carry(previous: PreviousReport, carried: Set<string>, id: string, backend: string): string {
  const text = previous.cells.get(id)?.get(backend) ?? '–'
  if (text !== '–') carried.add(`${id} ${backend}`)
  return text
}

/**
 * The safety matrix as a Markdown table (scenario x backend), latchkey runs only. A cell with no run at hand keeps
 * the earlier report's text (`previous`); `carried` receives "<scenario> <backend>" of each such cell.
 */
export function matrix(
  summaries: RunSummary[],
  previous: PreviousReport = readPreviousReport(undefined),
  carried = new Set<string>(),
): string {
  const latchkey = summaries.filter((s) => s.strategy === 'latchkey')
  const earlier = [...previous.cells.values()].flatMap((row) => [...row.keys()])
  const backends = [...new Set([...latchkey.map((s) => s.backend), ...earlier])].sort()
  const rows = SCENARIOS.filter((d) => latchkey.some((s) => s.scenario === d.id) || previous.cells.has(d.id)).map(
    (d) => {
      const cells = backends.map((b) => {
        const runs = latchkey.filter((s) => s.scenario === d.id && s.backend === b)
        return runs.length === 0 ? carry(previous, carried, d.id, b) : cell(runs, b)
      })
      return `| ${d.id} ${d.title} | ${cells.join(' | ')} |`
    },
  )
  if (latchkey.some((s) => s.scenario === 'T2') || previous.cells.has('T18'))
    rows.push(zombieRow(latchkey, backends, previous, carried))
  const liveness = backends.map((b) => {
    // A backend some of whose cells are carried over keeps the earlier row: its runs are not all at hand.
    const kept = previous.liveness.get(b)
    if (kept !== undefined && [...carried].some((c) => c.endsWith(` ${b}`))) return kept
    const runs = latchkey.filter((s) => s.backend === b)
    const lags = runs.filter((s) => s.losses > 0)
    return `| ${b} | ${median(runs.map((s) => s.unavailableP50Ms))} / ${Math.max(0, ...runs.map((s) => s.unavailableMaxMs))} | ${lags.length === 0 ? '–' : Math.max(...lags.map((s) => s.lossLagMaxMs))} | ${sum(
      runs.filter((s) => !s.fencing),
      (s) => s.lostUpdates,
    )} / ${sum(
      runs.filter((s) => s.fencing),
      (s) => s.lostUpdates,
    )} | ${sum(runs, (s) => s.tokenRegressions)} |`
  })
  return [
    `| scenario | ${backends.join(' | ')} |`,
    `| --- | ${backends.map(() => '---').join(' | ')} |`,
    ...rows,
    '',
    '| backend | unavailable p50 / max (ms) | loss-signal lag after a successor, max (ms) | lost updates, fencing off / on | token regressions |',
    '| --- | --- | --- | --- | --- |',
    ...liveness,
  ].join('\n')
}

/** Writes the loss-lag CDF figure of the latchkey runs and returns the Markdown that shows it. */
function lagCdf(summaries: RunSummary[], figuresDir: string): string {
  const byBackend = new Map<string, number[]>()
  for (const s of summaries) {
    if (s.strategy !== 'latchkey') continue
    byBackend.set(s.backend, [...(byBackend.get(s.backend) ?? []), ...(s.lossLagsMs ?? [])])
  }
  const svg = lagCdfSvg(byBackend)
  if (svg === '') return ''
  mkdirSync(figuresDir, { recursive: true })
  writeFileSync(join(figuresDir, 'loss-lag-cdf.svg'), svg)
  return '![loss-detection lag CDF per backend](figures/loss-lag-cdf.svg)'
}

/** Copies a run's timeline into lab/figures (tracked) and returns a Markdown link to it, or '' without one. */
function figure(resultsDir: string, figuresDir: string | undefined, run: string): string {
  const svg = join(resultsDir, run, 'timeline.svg')
  if (figuresDir === undefined || !existsSync(svg)) return ''
  mkdirSync(figuresDir, { recursive: true })
  copyFileSync(svg, join(figuresDir, `${run}.svg`))
  return ` [timeline](figures/${run}.svg)`
}

/** A verdict paragraph per naive algorithm, with the history excerpt that proves it (and its timeline). */
export function verdicts(
  summaries: RunSummary[],
  resultsDir = '',
  figuresDir?: string,
  previous?: PreviousReport,
): string {
  // Without a naive run at hand, the earlier report's verdicts stand (with their excerpts and timelines).
  if (previous?.naive !== undefined && !summaries.some((s) => s.strategy !== 'latchkey')) return previous.naive
  const parts: string[] = []
  for (const naive of NAIVE) {
    const run = summaries.find((s) => s.strategy === naive.strategy && s.scenario === naive.scenario)
    if (run === undefined) {
      parts.push(`- **${naive.claim}**: not run.`)
      continue
    }
    const verdict = naive.confirmed(run, run.ttlMs) ? 'confirmed' : 'NOT confirmed by this run'
    const same = summaries.filter((s) => s.strategy === 'latchkey' && s.backend === 'redis' && s.fencing)
    const twin = same.find((s) => s.scenario === naive.sameFaultAs)
    const twinText =
      twin === undefined
        ? ''
        : ` latchkey on Redis with fencing under the same fault (${twin.run}): ${twin.overlaps} overlaps, ${twin.staleAccepted} stale writes accepted, ${twin.staleRejected} rejected, ${twin.lostUpdates} lost updates.`
    const figures = figure(resultsDir, figuresDir, run.run) + (twin ? figure(resultsDir, figuresDir, twin.run) : '')
    parts.push(`- **${naive.claim}**: ${verdict} (${run.run}: ${naive.evidence(run)}).${twinText}${figures}`)
    if (run.excerpt.length > 0) {
      parts.push('', '  ```', ...run.excerpt.map((e) => `  ${JSON.stringify(e)}`), '  ```')
    }
  }
  return parts.join('\n')
}

/** The run a run-table row or a run name belongs to: "<scenario> <backend>", or undefined for a naive run. */
function cellOf(run: string): string | undefined {
  for (const d of SCENARIOS) {
    for (const b of Object.keys(TARGETS)) {
      if (run.startsWith(`${d.id}-${b}-fence-`) || run.startsWith(`smoke-${d.id}-${b}-fence-`)) return `${d.id} ${b}`
    }
  }
  return undefined
}

/**
 * Writes the report at `path` from the summaries under `resultsDir` (smoke runs only, or every other run);
 * returns the matrix text. The full report keeps what the earlier one at `path` says about runs not at hand.
 */
export function writeResults(resultsDir: string, path: string, note: string, smoke: boolean): string {
  const summaries = readSummaries(resultsDir).filter((s) => s.run.startsWith('smoke-') === smoke)
  const previous = readPreviousReport(smoke || !existsSync(path) ? undefined : readFileSync(path, 'utf8'))
  const carried = new Set<string>()
  const table = matrix(summaries, previous, carried)
  // The CDF needs every run's lags; with cells carried over, the earlier figure (of the earlier runs) stays.
  let cdf = ''
  if (!smoke && carried.size === 0) cdf = lagCdf(summaries, join(dirname(path), 'figures'))
  else if (!smoke)
    cdf =
      '![loss-detection lag CDF per backend](figures/loss-lag-cdf.svg) (of the runs the carried-over cells come from; the cells measured since are not in it)'
  const stamps = stampNote(summaries) ?? previous.stamps
  const fresh = new Set(summaries.map((s) => s.run))
  const naiveCarried = previous.naive !== undefined && !summaries.some((s) => s.strategy !== 'latchkey')
  // An earlier run's row stays while its cell (or, for a naive run, the verdicts) is carried over.
  const keptRuns = [...previous.runs.entries()].filter(([run]) => {
    if (fresh.has(run)) return false
    const at = cellOf(run)
    return at === undefined ? naiveCarried : carried.has(at)
  })
  const earlierInvocations = previous.invocations.filter((line) => !note.includes(line))
  const noteLines = note.split('\n')
  const fullNote = [noteLines[0], '', ...earlierInvocations, ...noteLines.slice(2)]
    .join('\n')
    .replace(/\n\n\n+/g, '\n\n')
  const runRows = [
    ...keptRuns,
    ...summaries.map((s): [string, string] => {
      const link = figure(resultsDir, smoke ? undefined : join(dirname(path), 'figures'), s.run)
      const name = link === '' ? s.run : `[${s.run}](figures/${s.run}.svg)`
      return [
        s.run,
        `| ${name} | ${s.sections} | ${s.overlaps} | ${s.staleAccepted}/${s.staleRejected} | ${s.lostUpdates} | ${s.faults} | ${s.seconds} | ${s.tokenRegressions} |`,
      ]
    }),
  ].sort(([a], [b]) => a.localeCompare(b))
  const text = [
    '# latchkey safety lab: results so far',
    '',
    'Generated by `npm run lab` (lab/report.ts) from the run summaries under lab/results; do not edit by hand.',
    fullNote,
    '',
    'Each cell: overlaps per 1,000 critical sections (the referee saw two clients inside at once; lock-level, so',
    'counted in runs with fencing off and on; "unwarned": how many of them had a holder inside whose `lease.signal`',
    'had not aborted yet) · stale writes accepted with fencing off · stale writes accepted with',
    'fencing on (and rejected by the fence) · number of runs. A stale write is a write by a client after another',
    'client entered the critical section. The F outcome is overlaps > 0 and `on 0`. A backend without fencing',
    'tokens (RedLock, PostgreSQL advisory locks, MariaDB GET_LOCK) runs with fencing off only and shows',
    '`on n/a (no token)`: nothing can reject its stale writes, so each of its overlaps stands unfenced.',
    ...(carried.size === 0
      ? []
      : [
          '',
          `${carried.size} cells are carried over from the earlier report (lab/results is not tracked, and only the runs`,
          'at hand are re-checked); a backend with carried cells keeps its earlier liveness row.',
        ]),
    '',
    table,
    '',
    ...(stamps === undefined ? [] : [stamps, '']),
    cdf,
    '',
    '## Cells of the plan not measured here',
    '',
    ...NOT_RUN.map((n) => `- **${n.cells}**: ${n.why}`),
    '',
    '## The naive algorithms',
    '',
    verdicts(summaries, resultsDir, smoke ? undefined : join(dirname(path), 'figures'), previous),
    '',
    '## Runs',
    '',
    'Each run links its timeline (one row per client: critical sections, red where two overlapped; grey while',
    'paused, orange while cut off from the lock service; | a write the resource accepted, × one the fence refused).',
    '',
    RUNS_HEADER,
    ...runRows.map(([, row]) => row),
    '',
  ].join('\n')
  writeFileSync(path, text)
  return table
}

/**
 * The bound on T17b's timestamps: a slowed client's events are stamped by the runner when they arrive, late by the
 * IPC channel's one-way delay, which the runner's pings sample (their round trip includes that delay once each way).
 */
function stampNote(summaries: RunSummary[]): string | undefined {
  const runs = summaries.filter((s) => s.stampRttMs !== undefined && s.stampRttMs.n > 0)
  if (runs.length === 0) return undefined
  const p99 = Math.max(...runs.map((s) => s.stampRttMs!.p99))
  const max = Math.max(...runs.map((s) => s.stampRttMs!.max))
  const p50 = median(runs.map((s) => s.stampRttMs!.p50))
  const n = sum(runs, (s) => s.stampRttMs!.n)
  return `T17b stamps: a slowed client's clocks cannot place its events on the shared time axis, so it sends them to the runner, which stamps them with the real monotonic clock on receipt, late by the channel's one-way delay. The runner's pings to those clients every 100 ms (${n} over ${runs.length} runs) came back within p50 ${p50} ms, p99 at most ${p99} ms, ${max} ms in the worst sample (a round trip includes the one-way delay once). Only those clients' own events carry that error (their \`lost\`, which decides \`unwarned\`); overlaps and stale writes are the referee's own stamps.`
}

const RUNS_HEADER = [
  '| run | sections | overlaps | stale acc./rej. | lost updates | faults | seconds | token regressions |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
].join('\n')
