/**
 * What an earlier lab/RESULTS.md says, for the runs whose summaries are no longer on this machine. The run
 * directories (lab/results) are not tracked, so a checkout that runs a few new cells has only their summaries:
 * rewriting the report from those alone would erase the matrix of the full run (about 90 minutes to redo). The report
 * therefore keeps each cell, liveness row, run row and the naive verdicts of the earlier report that no summary
 * at hand replaces, and says which cells it carried over.
 */
export interface PreviousReport {
  /** Scenario id (T1, T18, ...) -> backend -> cell text. */
  cells: Map<string, Map<string, string>>
  /** Backend -> its row of the liveness table. */
  liveness: Map<string, string>
  /** Run name -> its row of the run table. */
  runs: Map<string, string>
  /** The naive algorithms' section (without its heading). */
  naive: string | undefined
  /** The invocation lines that produced the earlier runs. */
  invocations: string[]
  /** The paragraph on the runner-stamped histories of T17b (see report.ts's `stampNote`). */
  stamps: string | undefined
}

const splitRow = (line: string): string[] =>
  line
    .replace(/^\|\s*/, '')
    .replace(/\s*\|\s*$/, '')
    .split(' | ')

/** Parses an earlier report; an empty record when there is none. */
export function readPreviousReport(text: string | undefined): PreviousReport {
  const previous: PreviousReport = {
    cells: new Map(),
    liveness: new Map(),
    runs: new Map(),
    naive: undefined,
    invocations: [],
    stamps: undefined,
  }
  if (text === undefined) return previous
  const lines = text.split('\n')
  const header = lines.findIndex((l) => l.startsWith('| scenario |'))
  if (header >= 0) {
    const backends = splitRow(lines[header]!).slice(1)
    for (let i = header + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
      const [label, ...cells] = splitRow(lines[i]!)
      const id = label!.split(' ')[0]!
      previous.cells.set(id, new Map(backends.map((b, k) => [b, cells[k] ?? '–'])))
    }
  }
  const liveness = lines.findIndex((l) => l.startsWith('| backend | unavailable'))
  if (liveness >= 0) {
    for (let i = liveness + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
      previous.liveness.set(splitRow(lines[i]!)[0]!, lines[i]!)
    }
  }
  const runs = lines.findIndex((l) => l.startsWith('| run | sections'))
  if (runs >= 0) {
    for (let i = runs + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
      const first = splitRow(lines[i]!)[0]!
      previous.runs.set(/^\[([^\]]+)\]/.exec(first)?.[1] ?? first, lines[i]!)
    }
  }
  const naive = text.indexOf('## The naive algorithms\n')
  const end = text.indexOf('\n## Runs')
  if (naive >= 0 && end > naive) previous.naive = text.slice(naive + '## The naive algorithms\n'.length, end).trim()
  previous.invocations = lines.filter((l) => l.startsWith('- `npm run lab'))
  previous.stamps = lines.find((l) => l.startsWith('T17b stamps:'))
  return previous
}
