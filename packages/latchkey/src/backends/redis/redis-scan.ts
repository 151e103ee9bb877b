/**
 * SCAN over every key matching a glob, for `list` (operator use, never on a lock's hot path). A Cluster client
 * scans each master, since SCAN sees one node's keys only.
 */

/** Sends one command on one connection. */
type Send = (args: string[]) => Promise<unknown>

/** Keys per SCAN reply asked of the server: large enough to walk a big keyspace in few round trips. */
const SCAN_COUNT = '1000'

/** Every key matching `pattern` on the node `send` talks to (SCAN may repeat a key; the caller dedupes). */
export async function scanNode(send: Send, pattern: string): Promise<string[]> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = (await send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT])) as [
      string | Buffer,
      (string | Buffer)[],
    ]
    cursor = String(next)
    for (const key of batch) keys.push(String(key))
  } while (cursor !== '0')
  return keys
}

/** The slice of an ioredis client or Cluster that scanning needs. */
export interface IoredisScannable {
  call(command: string, ...args: string[]): Promise<unknown>
  nodes?(role: 'master'): IoredisScannable[]
}

/** Scans a standalone ioredis client, or each master of an ioredis Cluster. */
export async function scanIoredis(client: IoredisScannable, pattern: string): Promise<string[]> {
  const nodes = typeof client.nodes === 'function' ? client.nodes('master') : [client]
  const found = await Promise.all(
    nodes.map((node) => scanNode((args) => node.call(args[0] as string, ...args.slice(1)), pattern)),
  )
  return found.flat()
}
