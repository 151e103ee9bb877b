// Self time of a V8 .cpuprofile grouped by function (top 40) and by package/file, in µs per pair when a pair count
// is given: node bench/lib/cpu-profile-summary.mjs <file.cpuprofile> [pairs]
import { readFileSync } from 'node:fs'

const [file, pairsArg] = process.argv.slice(2)
const prof = JSON.parse(readFileSync(file, 'utf8'))
const pairs = Number(pairsArg ?? 1)
const dt = new Map()
for (let i = 0; i < prof.samples.length; i++) {
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
