/** The long chaos run: many seeds one after the other, a line per run, then a summary table. */
import { type ChaosReport, runChaos } from './bank-run.js'

export interface SummaryOptions {
  readonly seeds: readonly number[]
  readonly transfers: number
  readonly log: (line: string) => void
}

const pad = (v: unknown, n: number) => String(v).padStart(n)

/** Runs every seed (an exception in a run counts as a failed run, with its message) and prints the table. */
export async function runMany(
  options: SummaryOptions,
): Promise<{ failedSeeds: number[]; erroredSeeds: number[]; reports: ChaosReport[] }> {
  const { seeds, transfers, log } = options
  const reports: ChaosReport[] = []
  const failedSeeds: number[] = []
  // A run that could not run (a database refusing connections, a port taken) proves nothing either way.
  const erroredSeeds: number[] = []
  const began = Date.now()
  log(
    `${pad('seed', 6)} ${pad('ms', 7)} ${pad('txs', 4)} ${pad('tcc', 4)} ${pad('ok', 4)} ${pad('fail', 4)} ${pad('park', 4)} ${pad('kC', 3)} ${pad('kA', 3)} ${pad('kB', 3)} ${pad('faults', 6)}  violations`,
  )
  for (const seed of seeds) {
    let report: ChaosReport
    try {
      report = await runChaos({ seed, transfers })
    } catch (error) {
      report = {
        seed,
        ms: 0,
        submitted: 0,
        tcc: 0,
        succeeded: 0,
        failed: 0,
        parked: 0,
        kills: { coordinator: 0, a: 0, b: 0 },
        faults: {},
        violations: [`run error: ${String(error)}`],
      }
    }
    reports.push(report)
    if (report.violations[0]?.startsWith('run error: ')) erroredSeeds.push(seed)
    else if (report.violations.length > 0) failedSeeds.push(seed)
    const faults = Object.values(report.faults).reduce((a, b) => a + b, 0)
    const k = report.kills
    log(
      `${pad(seed, 6)} ${pad(report.ms, 7)} ${pad(report.submitted, 4)} ${pad(report.tcc, 4)} ${pad(report.succeeded, 4)} ${pad(report.failed, 4)} ${pad(report.parked, 4)} ${pad(k.coordinator, 3)} ${pad(k.a, 3)} ${pad(k.b, 3)} ${pad(faults, 6)}  ${report.violations.length === 0 ? '-' : report.violations.join('; ')}`,
    )
  }
  const sum = (f: (r: ChaosReport) => number) => reports.reduce((a, r) => a + f(r), 0)
  const faultKinds: Record<string, number> = {}
  for (const r of reports) for (const [k, v] of Object.entries(r.faults)) faultKinds[k] = (faultKinds[k] ?? 0) + v
  log('')
  log(
    '| runs | could not run | with violations | transactions | of which TCC | succeeded | failed | parked then retried | coordinator kills | participant kills | injected faults | minutes |',
  )
  log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  log(
    `| ${reports.length} | ${erroredSeeds.length} | ${failedSeeds.length} | ${sum((r) => r.submitted)} | ${sum((r) => r.tcc)} | ${sum((r) => r.succeeded)} | ${sum((r) => r.failed)} | ${sum((r) => r.parked)} | ${sum((r) => r.kills.coordinator)} | ${sum((r) => r.kills.a + r.kills.b)} | ${sum((r) => Object.values(r.faults).reduce((a, b) => a + b, 0))} | ${((Date.now() - began) / 60_000).toFixed(1)} |`,
  )
  log(`faults by kind: ${JSON.stringify(faultKinds)}`)
  if (failedSeeds.length > 0) {
    log(`failing seeds: ${failedSeeds.join(',')}`)
    log(`replay: SEED=${failedSeeds.join(',')} npx vitest run packages/tx/test/bank-chaos.test.ts`)
  }
  if (erroredSeeds.length > 0) log(`seeds that could not run: ${erroredSeeds.join(',')}`)
  return { failedSeeds, erroredSeeds, reports }
}
