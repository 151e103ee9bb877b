/**
 * `work`, or an error naming `what` once `ms` pass without an answer. The lab's own calls to a shared server (the
 * probe before a run, the cleanup after it) go through this: a client such as node-zookeeper-client retries a server
 * that is down for ever, and one such call held a whole smoke run for minutes instead of reporting the run skipped.
 * `onTimeout` lets the caller close what would otherwise keep retrying (and the process alive).
 */
export async function within<T>(what: string, ms: number, work: Promise<T>, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.()
      reject(new Error(`${what}: no answer within ${ms} ms`))
    }, ms)
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}
