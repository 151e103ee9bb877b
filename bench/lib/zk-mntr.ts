import { connect } from 'node:net'
import { zkUrl } from '../../packages/latchkey/test/support/zookeeper-env.ts'

/** ZooKeeper's `mntr` four-letter word: znode count and approximate data size (paths + data, in bytes). */
export async function mntr(): Promise<{ znodes: number; bytes: number }> {
  const [host, port] = zkUrl().split(',')[0]?.split(':') ?? []
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), host, () => socket.write('mntr'))
    let data = ''
    socket.on('data', (chunk) => {
      data += chunk
    })
    socket.on('close', () => resolve(data))
    socket.on('error', reject)
  })
  const stat = (name: string) => Number(new RegExp(`^${name}\\s+(\\d+)`, 'm').exec(text)?.[1])
  return { znodes: stat('zk_znode_count'), bytes: stat('zk_approximate_data_size') }
}

/** Requests one ZooKeeper server has served so far (its `mntr` latency counters: every write, every read). */
export interface ZkRequestCounters {
  readonly writes: number
  readonly reads: number
}

/**
 * The request counters of the server at `hostPort`. Counted by the server, they treat every client alike (Curator's
 * Java client and latchkey's): on a server only the bench uses, a window's delta is what the contender sent. Reads
 * include the clients' pings (one per session every third of its timeout, a few per second).
 */
export async function zkRequestCounters(hostPort: string): Promise<ZkRequestCounters> {
  const [host, port] = hostPort.split(':')
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), host, () => socket.write('mntr'))
    let data = ''
    socket.on('data', (chunk) => {
      data += chunk
    })
    socket.on('close', () => resolve(data))
    socket.on('error', reject)
  })
  const stat = (name: string) => Number(new RegExp(`^${name}\\s+(\\d+)`, 'm').exec(text)?.[1])
  return { writes: stat('zk_cnt_updatelatency'), reads: stat('zk_cnt_readlatency') }
}
