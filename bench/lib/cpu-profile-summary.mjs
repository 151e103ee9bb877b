// Self time of a V8 .cpuprofile grouped by function (top 40) and by package/file, in µs per pair when a pair count
// is given: node bench/lib/cpu-profile-summary.mjs <file.cpuprofile> [pairs] [fromEndMs toEndMs]
// With fromEndMs and toEndMs, only the samples taken between that long and that long before the profile's end count
// (e.g. 5000 500: a 5 s window closing half a second before the process ended, without its start-up and module
// loading); `pairs` are then the pairs made in that span.
import { readFileSync } from 'node:fs'

const [file, pairsArg, fromEndArg, toEndArg] = process.argv.slice(2)
const prof = JSON.parse(readFileSync(file, 'utf8'))
const pairs = Number(pairsArg ?? 1)
// Profile times are in µs.
const from = fromEndArg === undefined ? Number.NEGATIVE_INFINITY : prof.endTime - Number(fromEndArg) * 1000
const to = toEndArg === undefined ? Number.POSITIVE_INFINITY : prof.endTime - Number(toEndArg) * 1000
const dt = new Map()
let at = prof.startTime
for (let i = 0; i < prof.samples.length; i++) {
  at += prof.timeDeltas[i] ?? 0
  if (at < from || at > to) continue
  dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0))
}
const byFn = new Map()
const byFile = new Map()
let total = 0
for (const node of prof.nodes) {
  const t = dt.get(node.id) ?? 0
  if (t === 0) continue
  total += t
  const { functionName, url, lineNumber } = node.callFrame
  const short = url
    .replace(/^.*node_modules\//, 'nm:')
    .replace(/^.*\/packages\//, '')
    .replace(/^file:\/\//, '')
  const fn = `${functionName || '(anon)'} ${short}:${lineNumber + 1}`
  byFn.set(fn, (byFn.get(fn) ?? 0) + t)
  const group = short.startsWith('nm:') ? short.split('/').slice(0, 1).join('/') : short || functionName
  byFile.set(group, (byFile.get(group) ?? 0) + t)
}
const show = (m, n) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, t]) => `${(t / pairs).toFixed(2).padStart(8)} µs  ${k}`)
    .join('\n')
console.log(
  `total sampled ${(total / pairs).toFixed(1)} µs/pair\n\n-- by file --\n${show(byFile, 30)}\n\n-- by function --\n${show(byFn, 45)}`,
)
