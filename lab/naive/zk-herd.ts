import zookeeper from 'node-zookeeper-client'
import type { Held, Strategy, StrategyContext } from '../client/strategy.js'

type Zk = ReturnType<typeof zookeeper.createClient>

/**
 * One plain ephemeral node as the lock, and every waiter watching that node. Each release wakes every waiter,
 * they all race to create it and all but one go back to watching: the herd. Each wake-up is logged as `wake`,
 * so the checker counts wake-ups per release (latchkey's recipe watches only the predecessor: one per release).
 */
export async function zkHerdStrategy({ config, history }: StrategyContext): Promise<Strategy> {
  const client = zookeeper.createClient(config.url, { sessionTimeout: 4_000 })
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve())
    client.connect()
  })
  const dir = `/${config.namespace}`
  const node = `${dir}/${config.lockName}`
  await call<string>((cb) => client.mkdirp(dir, cb))
  return {
    async acquire(): Promise<Held> {
      for (;;) {
        if (await tryCreate(client, node)) break
        const woken = new Promise<void>((resolve) => {
          client.exists(
            node,
            () => {
              history.log('info', 'wake')
              resolve()
            },
            (error, stat) => {
              if (error || !stat) resolve() // gone between our create and the watch: try again now
            },
          )
        })
        await woken
      }
      return {
        token: 0n,
        stillValid: async () => true,
        release: () => call<void>((cb) => client.remove(node, -1, (e) => cb(e))),
      }
    },
    close: async () => client.close(),
  }
}

async function tryCreate(client: Zk, node: string): Promise<boolean> {
  try {
    await call<string>((cb) => client.create(node, zookeeper.CreateMode.EPHEMERAL, cb))
    return true
  } catch (error) {
    if ((error as { code?: number }).code === zookeeper.Exception.NODE_EXISTS) return false
    throw error
  }
}

function call<T>(run: (cb: (error: unknown, result?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, result) => (error ? reject(error) : resolve(result as T))))
}
