import { randomInt } from 'node:crypto'
import { it } from 'vitest'
import type { SuiteEnv } from './env.js'
import { GROUP_KINDS, type KindGroup } from './grant-model.js'
import { ModelRun } from './model-run.js'
import { type ModelStep, openingSteps } from './model-steps.js'

/** How many model runs, and how long, each kind group gets on one backend. */
export interface ModelCaseSize {
  readonly runs: number
  readonly steps: number
}

/** Enough for every step kind to occur in each group, few enough for a slow server to run in seconds. */
const SUITE_SIZE: ModelCaseSize = { runs: 2, steps: 20 }

/**
 * The grant rules, checked as a model: random sequences of tryAcquire, short and long waits, waiters giving up,
 * releases and expiries on one lock name per run, each answer compared with what the rules allow (see
 * grant-model.ts). Every backend runs it, the Redis scripts' fast paths included (see `openingSteps`). Set
 * `LATCHKEY_MODEL_SEED` to replay the seed a failure names.
 */
export function modelCases(env: SuiteEnv, size: ModelCaseSize = SUITE_SIZE): void {
  for (const group of Object.keys(GROUP_KINDS) as KindGroup[]) {
    const supported = GROUP_KINDS[group].every((kind) => env.supports(kind))
    it.skipIf(!supported)(
      `grant rules model: random ${GROUP_KINDS[group].join('/')} sequences agree with the rules`,
      async () => {
        for (const seed of modelSeeds(size.runs)) await runModel(env, group, seed, size.steps)
      },
      env.ms(60_000),
    )
  }
}

/** `runs` fresh seeds, or the one in `LATCHKEY_MODEL_SEED` (to replay a failure). */
export function modelSeeds(runs: number): number[] {
  const replay = process.env.LATCHKEY_MODEL_SEED
  if (replay !== undefined && replay !== '') return [Number(replay) >>> 0]
  return Array.from({ length: runs }, () => randomInt(2 ** 32))
}

/**
 * One run: a sequence of `steps` operations drawn by a PRNG seeded with `seed` (the same seed replays the same
 * sequence), each checked against the model as it is made, after the group's opening steps (which take the
 * Redis scripts' fast paths, see `openingSteps`). Throws, naming the seed and the steps so far, at the first
 * disagreement. `onStep` hears of each step before it is made.
 */
export async function runModel(
  env: SuiteEnv,
  group: KindGroup,
  seed: number,
  steps: number,
  onStep?: (step: ModelStep) => void,
): Promise<void> {
  const run = new ModelRun(env, group, seed)
  try {
    const prefix = openingSteps(group)
    for (let i = 0; i < steps; i++) {
      run.checkWaiting()
      const step = prefix[i] ?? run.draw()
      onStep?.(step)
      await run.step(step)
    }
    run.checkWaiting()
  } finally {
    await run.retire()
  }
}
