import { afterAll, describe, expect, it } from 'vitest'
import { MemoryBackend } from '../backends/memory/memory-backend.js'
import { modelSeeds, runModel } from './cases-model.js'
import { createEnv } from './env.js'
import { GROUP_KINDS, type KindGroup } from './grant-model.js'
import type { ModelStep } from './model-steps.js'

/**
 * The conformance suite's model case runs a few short sequences per backend; here, on the memory backend (the
 * rules of `decideGrant` that SQLite and the SQL tables share), many longer ones, and every kind of step must
 * have occurred, so the sequences cannot quietly stop reaching a situation.
 */
describe('grant rules model on the memory backend', () => {
  const backend = new MemoryBackend()
  // Expiries and short waits cost wall time: a twentieth of the suite's (the memory backend answers at once).
  const env = createEnv({ timeScale: 0.05 }, () => backend)
  afterAll(() => backend.close())

  it.each(Object.keys(GROUP_KINDS) as KindGroup[])('%s: 20 runs of 30 steps agree with the model', async (group) => {
    const seen = new Set<string>()
    const note = (step: ModelStep) => seen.add(step.op)
    for (const seed of modelSeeds(20)) await runModel(env, group, seed, 30, note)
    const ops = ['try', 'brief', 'wait', 'leave', 'release', 'expire', ...(group === 'semaphore' ? ['mismatch'] : [])]
    if (process.env.LATCHKEY_MODEL_SEED === undefined) expect([...seen].sort()).toEqual(ops.sort())
  })
})
