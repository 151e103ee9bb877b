import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { lagCdfSvg } from './checker/lag-cdf.js'
import type { RunSummary } from './checker/summarize.js'
import { NOT_RUN } from './not-run.js'
import { mergeTables, parseReport, renderMatrix } from './report-merge.js'
import { NAIVE, SCENARIOS } from './scenarios.js'

/** Every `summary.json` under `resultsDir`. */
export function readSummaries(resultsDir: string): RunSummary[] {
  if (!existsSync(resultsDir)) return []
  return readdirSync(resultsDir)
    .map((run) => join(resultsDir, run, 'summary.json'))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as RunSummary)
}

const sum = (runs: RunSummary[], pick: (s: RunSummary) => number): number => runs.reduce((n, s) => n + pick(s), 0)

/** One matrix cell: overlaps per 1,000 sections (all runs), stale writes accepted with fencing off and on. */
function cell(runs: RunSummary[]): string {
  if (runs.length === 0) return '–'
  const sections = sum(runs, (s) => s.sections)
  const per1000 = sections === 0 ? 0 : Math.round((sum(runs, (s) => s.overlaps) / sections) * 10_000) / 10
  const off = runs.filter((s) => !s.fencing)
  const on = runs.filter((s) => s.fencing)
  const offText = off.length === 0 ? 'off –' : `off ${sum(off, (s) => s.staleAccepted)}`
  const onText =
    on.length === 0 ? 'on –' : `on ${sum(on, (s) => s.staleAccepted)} (${sum(on, (s) => s.staleRejected)} rej.)`
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
function zombieRow(latchkey: RunSummary[], backends: string[]): string {
  const cells = backends.map((b) => {
    const runs = latchkey.filter((s) => s.scenario === 'T2' && s.backend === b)
    if (runs.length === 0) return '–'
    return `${sum(runs, (s) => s.cleanOverlaps ?? 0)} overlaps without a paused client, over ${sum(runs, (s) => s.faults)} zombie holders · n=${runs.length}`
  })
  return `| T18 zombie release/renewal after a successor took the lock (from the T2 runs) | ${cells.join(' | ')} |`
}

/** The safety matrix as a Markdown table (scenario x backend), latchkey runs only. */
export function matrix(summaries: RunSummary[]): string {
  const latchkey = summaries.filter((s) => s.strategy === 'latchkey')
  const backends = [...new Set(latchkey.map((s) => s.backend))].sort()
  const rows = SCENARIOS.filter((d) => latchkey.some((s) => s.scenario === d.id)).map((d) => {
    const cells = backends.map((b) => cell(latchkey.filter((s) => s.scenario === d.id && s.backend === b)))
    return `| ${d.id} ${d.title} | ${cells.join(' | ')} |`
  })
  if (latchkey.some((s) => s.scenario === 'T2')) rows.push(zombieRow(latchkey, backends))
  const liveness = backends.map((b) => {
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
function lagCdf(summaries: RunSummary[], figuresDir: string, suffix = ''): string {
  const byBackend = new Map<string, number[]>()
  for (const s of summaries) {
    if (s.strategy !== 'latchkey') continue
    byBackend.set(s.backend, [...(byBackend.get(s.backend) ?? []), ...(s.lossLagsMs ?? [])])
  }
  const svg = lagCdfSvg(byBackend)
  if (svg === '') return ''
  mkdirSync(figuresDir, { recursive: true })
  writeFileSync(join(figuresDir, `loss-lag-cdf${suffix}.svg`), svg)
  return `![loss-detection lag CDF per backend](figures/loss-lag-cdf${suffix}.svg)`
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
export function verdicts(summaries: RunSummary[], resultsDir = '', figuresDir?: string): string {
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

/**
 * Writes the report at `path` from the summaries under `resultsDir` (smoke runs only, or every other run);
 * returns the matrix text. `merge` (a partial run): the cells, rows and lines of the report already at `path`
 * stay unless a run at hand measured them (see report-merge.ts), and the earlier loss-lag figure is kept beside
 * one of the runs at hand.
 */
export function writeResults(resultsDir: string, path: string, note: string, smoke: boolean, merge = false): string {
  const summaries = readSummaries(resultsDir).filter((s) => s.run.startsWith('smoke-') === smoke)
  const figuresDir = smoke ? undefined : join(dirname(path), 'figures')
  const previous = merge && existsSync(path) ? parseReport(readFileSync(path, 'utf8')) : undefined
  const runRows = summaries.map((s) => {
    const link = figure(resultsDir, figuresDir, s.run)
    const name = link === '' ? s.run : `[${s.run}](figures/${s.run}.svg)`
    return `| ${name} | ${s.sections} | ${s.overlaps} | ${s.staleAccepted}/${s.staleRejected} | ${s.lostUpdates} | ${s.faults} | ${s.seconds} | ${s.tokenRegressions} |`
  })
  let table = matrix(summaries)
  let noteText = note
  let naive = verdicts(summaries, resultsDir, figuresDir)
  let cdf = smoke ? '' : lagCdf(summaries, join(dirname(path), 'figures'), previous === undefined ? '' : '-added')
  if (previous !== undefined) {
    const now = parseReport(
      [note, table, '', '## The naive algorithms', '', naive, '', '## Runs', '', RUNS_HEADER, ...runRows].join('\n'),
    )
    // No naive algorithm among the runs at hand: their verdicts are the earlier report's.
    if (!summaries.some((s) => s.strategy !== 'latchkey')) now.naive = ''
    const merged = mergeTables(
      previous,
      now,
      SCENARIOS.map((d) => d.id),
    )
    table = renderMatrix(merged)
    noteText = `${note.split('\n')[0]}\n\n${merged.invocations.join('\n')}\n`
    naive = merged.naive
    runRows.splice(0, runRows.length, ...merged.runs.values())
    const earlier = '![loss-detection lag CDF per backend](figures/loss-lag-cdf.svg)'
    cdf =
      cdf === ''
        ? earlier
        : `${earlier}\n\nThe same for the runs of the partial invocations since (${[...new Set(summaries.map((s) => s.scenario))].join(', ')}):\n\n${cdf}`
  }
  const text = [
    '# latchkey safety lab: results so far',
    '',
    'Generated by `npm run lab` (lab/report.ts) from the run summaries under lab/results; do not edit by hand.',
    noteText,
    '',
    'Each cell: overlaps per 1,000 critical sections (the referee saw two clients inside at once; lock-level, so',
    'counted in runs with fencing off and on; "unwarned": how many of them had a holder inside whose `lease.signal`',
    'had not aborted yet) · stale writes accepted with fencing off · stale writes accepted with',
    'fencing on (and rejected by the fence) · number of runs. A stale write is a write by a client after another',
    'client entered the critical section. The F outcome is overlaps > 0 and `on 0`.',
    '',
    table,
    '',
    cdf,
    '',
    '## Cells of the plan not measured here',
    '',
    ...NOT_RUN.map((n) => `- **${n.cells}**: ${n.why}`),
    '',
    '## The naive algorithms',
    '',
    naive,
    '',
    '## Runs',
    '',
    'Each run links its timeline (one row per client: critical sections, red where two overlapped; grey while',
    'paused, orange while cut off from the lock service; | a write the resource accepted, × one the fence refused).',
    '',
    RUNS_HEADER,
    ...runRows,
    '',
  ].join('\n')
  writeFileSync(path, text)
  return table
}

const RUNS_HEADER = [
  '| run | sections | overlaps | stale acc./rej. | lost updates | faults | seconds | token regressions |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
].join('\n')
