import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time: most of a file's time is spent waiting on servers and child processes. One at a
    // time the suite took about 13 minutes of vitest alone on this 2-core machine, over the whole command's
    // 15-minute budget; two at a time about 7 (the full suite passed this way, 1,442 tests, with helpers' work
    // loading the machine beside it).
    maxWorkers: 2,
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
