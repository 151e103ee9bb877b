import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HistoryEvent } from '../lib/history.js'
import type { Scenario } from '../runner/run-scenario.js'
import type { StampRtt } from './summarize.js'

/** A run as the checker reads it back: every history merged on the shared monotonic time axis. */
export interface LoadedRun {
  dir: string
  meta: Scenario & { startedAt: number; endedAt: number; finalValue: number; spawned: number; stampRttMs?: StampRtt }
  /** Every event of every history, sorted by time. */
  events: HistoryEvent[]
}

/** Reads `meta.json` and every `*.jsonl` of a run directory (a torn last line of a killed client is skipped). */
export function loadRun(dir: string): LoadedRun {
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as LoadedRun['meta']
  const events: HistoryEvent[] = []
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.jsonl'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (line.trim() === '') continue
      try {
        events.push(JSON.parse(line) as HistoryEvent)
      } catch {
        // SIGKILL can cut the last line short; the events before it are whole.
      }
    }
  }
  events.sort((a, b) => a.t - b.t)
  return { dir, meta, events }
}

/** The client an event is about: the referee and the nemesis name it in `client`. */
export function subject(event: HistoryEvent): string {
  return event.client ?? event.proc
}
