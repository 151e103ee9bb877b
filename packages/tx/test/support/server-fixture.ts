/**
 * What the service tests share: a participant service, and `latchkey-tx serve` as a child process on a SQLite
 * store in a temporary directory; `close()` stops both and removes the directory.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { tempDir } from './databases.js'
import { type Participant, startParticipant } from './dtm-participant.js'
import { type ServerProcess, startServer } from './server-process.js'

export interface ServerFixture {
  readonly server: ServerProcess
  readonly participant: Participant
  /** The participant's `/api/busi` base URL (DTM's examples' path). */
  readonly busi: string
  readonly store: string
  close(): Promise<void>
}

/** Starts the participant and the server (with `serveArgs` added to `serve`). */
export async function startServerFixture(serveArgs: readonly string[]): Promise<ServerFixture> {
  const tmp = tempDir()
  const store = `sqlite:${join(tmp.dir, 'tx.db')}`
  const participant = await startParticipant()
  const server = await startServer(store, serveArgs)
  return {
    server,
    participant,
    busi: `${participant.base}/api/busi`,
    store,
    close: async () => {
      await server.stop()
      await participant.close()
      tmp.remove()
    },
  }
}

/** A gid unique to this run: `<tag>-<8 hex>`. */
export const uniqueGid = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}`

/**
 * The fixture for one `describe`: started in `beforeAll`, closed in `afterAll`; its fields are read when the
 * tests run.
 */
export function useServerFixture(serveArgs: readonly string[]): Omit<ServerFixture, 'close'> {
  let fixture: ServerFixture | undefined
  beforeAll(async () => {
    fixture = await startServerFixture(serveArgs)
  })
  afterAll(() => fixture?.close())
  const started = () => {
    if (fixture === undefined) throw new Error('the server fixture is used before beforeAll started it')
    return fixture
  }
  return {
    get server() {
      return started().server
    },
    get participant() {
      return started().participant
    },
    get busi() {
      return started().busi
    },
    get store() {
      return started().store
    },
  }
}
