/**
 * Prints the checker's summary for runs: `npx tsx lab/checker/cli.ts lab/results/<run> [...]` (no argument:
 * every run under lab/results). `--excerpt` adds the history around the first violation.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { runDir } from '../runner/run-scenario.js'
import { checkRun, formatSummary } from './summarize.js'

const args = process.argv.slice(2)
const showExcerpt = args.includes('--excerpt')
let dirs = args.filter((a) => !a.startsWith('--'))
if (dirs.length === 0) {
  const root = runDir('')
  dirs = existsSync(root) ? readdirSync(root).map((name) => join(root, name)) : []
}
for (const dir of dirs.filter((d) => existsSync(join(d, 'meta.json')))) {
  const summary = checkRun(dir)
  console.log(formatSummary(summary))
  if (showExcerpt) for (const event of summary.excerpt) console.log(`    ${JSON.stringify(event)}`)
}
