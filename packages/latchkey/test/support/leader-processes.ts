/** Starts and steers the participant processes of the multi-process leader-election test (`leader-worker.ts`). */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { LeaderLine, LeaderTask } from './leader-worker.js'

const workerPath = fileURLToPath(new URL('./leader-worker.ts', import.meta.url))

/** One participant process and everything it printed so far. */
export interface Participant {
  readonly id: string
  readonly child: ChildProcess
  readonly lines: LeaderLine[]
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string | null>
  stderr: string
}

/** Spawns a participant; its stdout lines are parsed into `lines` as they come. */
export function startParticipant(task: LeaderTask): Participant {
  const child = spawn(process.execPath, ['--import', 'tsx', workerPath, JSON.stringify(task)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const participant: Participant = {
    id: task.id,
    child,
    lines: [],
    stderr: '',
    // 'close' (stdout read to its end), not 'exit', which can come before its last lines (a 'revoked') are read.
    exited: new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? signal))),
  }
  let buffer = ''
  child.stdout?.on('data', (d: Buffer) => {
    buffer += d
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    for (const part of parts) if (part.trim() !== '') participant.lines.push(JSON.parse(part) as LeaderLine)
  })
  child.stderr?.on('data', (d: Buffer) => {
    participant.stderr += d
  })
  return participant
}

/** The participant that leads now according to what they printed (elected, not revoked since), if any. */
export function currentLeader(participants: readonly Participant[]): Participant | undefined {
  return participants.find((p) => p.child.exitCode === null && p.child.signalCode === null && leads(p))
}

function leads(p: Participant): boolean {
  const last = p.lines.filter((l) => l.type === 'elected' || l.type === 'revoked').at(-1)
  return last?.type === 'elected'
}

/** Every line of every participant, ordered by the time it was printed. */
export function allLines(participants: readonly Participant[]): LeaderLine[] {
  return participants.flatMap((p) => p.lines).sort((a, b) => a.at - b.at)
}
