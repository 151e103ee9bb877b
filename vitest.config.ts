import { defineConfig } from 'vitest/config'

/**
 * Files whose tests bound how long a fault takes to be noticed or survived (a participant's timeout, a leader
 * failover, a SIGSTOPped holder, a crash-matrix child, a dropped connection): they run one file at a time, after
 * the rest, so no other test file competes with them for the 2 cores. Two files at a time for everything once
 * took the suite from about 13 minutes to about 6, but in two of three whole runs failed some of these files'
 * timing bounds; the other files only wait on their servers and run two at a time.
 */
const TIMING_BOUND = [
  'packages/tx/test/**/*{crash,chaos,fault,drop,restart,race}*.test.ts',
  'packages/tx/test/three-phase*.test.ts',
  'packages/latchkey/test/*{fault,ensemble,sigstop,exit,clock,deadline,expiry,terminated,late-grant,leader,notify}*.test.ts',
  'apps/flash-sale/test/*{fault,e2e,secrets}*.test.ts',
]

const ALL = [
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'apps/*/test/**/*.test.ts',
  'apps/*/src/**/*.test.ts',
]

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'waiting', include: ALL, exclude: TIMING_BOUND, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'timing', include: TIMING_BOUND, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
    coverage: {
      provider: 'v8',
      include: ['packages/latchkey/src/**/*.ts'],
      exclude: ['**/*.test.ts', 'packages/latchkey/src/testing/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: '.data/coverage',
      // The core owns all policy: it must stay covered (issue 2 asks for >= 90 % of its lines).
      thresholds: { 'packages/latchkey/src/core/**': { lines: 90 } },
    },
  },
})
