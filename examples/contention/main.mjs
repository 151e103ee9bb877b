// The contention demo: several OS processes fight for one SQLite-backed lock (no server needed). It prints the
// acquisitions per process, the fencing-token sequence, and checks that no two holders ever overlapped.
import { fork } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '4' },
    tasks: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '20' },
    'hold-ms': { type: 'string', default: '1' },
  },
})
const here = dirname(fileURLToPath(import.meta.url))
const dir = join(here, '..', '..', '.data', 'contention-demo')
rmSync(dir, { recursive: true, force: true })
mkdirSync(dir, { recursive: true })
const task = {
  dbPath: join(dir, 'locks.db'),
  counterFile: join(dir, 'counter'),
  tasks: Number(values.tasks),
  rounds: Number(values.rounds),
  holdMs: Number(values['hold-ms']),
}
writeFileSync(task.counterFile, '0')
const processes = Number(values.processes)
const expected = processes * task.tasks * task.rounds
console.log(
  `${processes} processes x ${task.tasks} tasks x ${task.rounds} rounds contend for one lock in ${task.dbPath}`,
)

const started = performance.now()
const results = await Promise.all(
  Array.from({ length: processes }, () => {
    const child = fork(join(here, 'worker.mjs'), [JSON.stringify(task)])
    return new Promise((resolve, reject) => {
      let sections
      child.on('message', (m) => {
        sections = m
      })
      child.on('exit', (code) =>
        code === 0 && sections ? resolve(sections) : reject(new Error(`worker exited ${code}`)),
      )
    })
  }),
)
const elapsedS = (performance.now() - started) / 1000
const sections = results.flat().sort((a, b) => a.start - b.start)

console.log('\nacquisitions per process')
for (const [i, list] of results.entries()) console.log(`  process ${i + 1} (pid ${list[0]?.pid}): ${list.length}`)
const tokens = sections.map((s) => s.token)
console.log(`\nfencing tokens in acquisition order: ${tokens.slice(0, 12).join(' ')} ... ${tokens.slice(-4).join(' ')}`)

const counter = Number(readFileSync(task.counterFile, 'utf8'))
let overlaps = 0
let tokenInversions = 0
for (let i = 1; i < sections.length; i++) {
  if (sections[i].start < sections[i - 1].end) overlaps++
  if (BigInt(sections[i].token) <= BigInt(sections[i - 1].token)) tokenInversions++
}
const checks = [
  [
    `counter file = ${counter}, acquisitions = ${sections.length}, expected ${expected}`,
    counter === expected && sections.length === expected,
  ],
  [`overlapping critical sections: ${overlaps}`, overlaps === 0],
  [`tokens not increasing in acquisition order: ${tokenInversions}`, tokenInversions === 0],
]
console.log(
  `\n${sections.length} acquisitions in ${elapsedS.toFixed(2)} s (${Math.round(sections.length / elapsedS)}/s)`,
)
for (const [text, ok] of checks) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${text}`)
rmSync(dir, { recursive: true, force: true })
process.exitCode = checks.every(([, ok]) => ok) ? 0 : 1
