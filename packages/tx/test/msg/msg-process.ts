/** Starting the producer process (`msg-producer.ts`) and reading its lines. */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./msg-producer.ts', import.meta.url))

export interface Producer {
  readonly child: ChildProcess
  readonly lines: string[]
  /** Resolves when a line equal to `line` was printed (or rejects when the process exits first). */
  waitFor(line: string, timeoutMs?: number): Promise<void>
  /** Resolves when the process exited, with its signal or code. */
  readonly exited: Promise<string>
}

export function startProducer(
  spec: string,
  storeUrl: string,
  gid: string,
  mode: 'run' | 'hold',
  crashAt?: string,
): Producer {
  const env = { ...process.env }
  if (crashAt === undefined) delete env.LATCHKEY_TX_CRASH_AT
  else env.LATCHKEY_TX_CRASH_AT = crashAt
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...spec.split(' '), storeUrl, gid, mode], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env,
  })
  const lines: string[] = []
  const waiters: { line: string; resolve: () => void }[] = []
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(line)
    for (const w of waiters.filter((x) => x.line === line)) w.resolve()
  })
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))))
  return {
    child,
    lines,
    exited,
    waitFor(line, timeoutMs = 20_000) {
      if (lines.includes(line)) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`the producer never printed ${line}: ${lines.join(' | ')}`)),
          timeoutMs,
        )
        void exited.then(() => {
          // Lines are read before the exit event is handled only most of the time: give the reader a turn.
          setImmediate(() => {
            clearTimeout(timer)
            if (lines.includes(line)) resolve()
            else reject(new Error(`the producer exited without printing ${line}: ${lines.join(' | ')}`))
          })
        })
        waiters.push({
          line,
          resolve: () => {
            clearTimeout(timer)
            resolve()
          },
        })
      })
    },
  }
}
