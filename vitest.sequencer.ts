import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * The files that take longest, 35-60 s each on a 2-core host: the backend conformance suites against their real
 * servers, the CLI and package checks, the flash-sale strategies, the transaction CLI. Without the timings of an
 * earlier run (a fresh clone, as CI has) vitest starts the largest files first, and these are among the smallest
 * (most just call describeBackendConformance), so they started last and ran alone at the end: the `waiting`
 * project took 234 s where its 595 s of files over three workers would fit in about 200.
 */
const LONG_FIRST = [
  'packages/latchkey/test/mysql.test.ts',
  'packages/latchkey/test/redis.test.ts',
  'packages/latchkey/test/etcd.test.ts',
  'packages/latchkey/test/cli.test.ts',
  'packages/latchkey/test/zookeeper.test.ts',
  'apps/flash-sale/test/strategies.test.ts',
  'packages/latchkey/test/postgres.test.ts',
  'packages/tx/test/cli-admin.test.ts',
  'packages/latchkey/test/package.test.ts',
  'packages/latchkey/test/redlock.test.ts',
  'packages/latchkey/test/embedded.test.ts',
]

/** vitest's order, but within each project the files of {@link LONG_FIRST} go first, in that list's order. */
export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const at = new Map(sorted.map((file, i) => [file, i]))
    const rank = (file: TestSpecification): number => {
      const i = LONG_FIRST.indexOf(relative(file.project.config.root, file.moduleId))
      return i < 0 ? LONG_FIRST.length : i
    }
    // Projects stay where vitest put them (their files are contiguous in its order).
    return sorted.sort((a, b) =>
      a.project === b.project
        ? rank(a) - rank(b) || (at.get(a) ?? 0) - (at.get(b) ?? 0)
        : (at.get(a) ?? 0) - (at.get(b) ?? 0),
    )
  }
}
