import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { SaleStore } from '../store/types.js'
import { EventFeed } from './event-feed.js'
import type { LiveStats } from './live-stats.js'
import { refuse } from './replies.js'

const PAGE = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8')

/** Sales shown on the dashboard and listed by `GET /sales`. */
const RECENT_SALES = 20

/** Options of {@link registerDashboardRoutes}. */
export interface DashboardOptions {
  /** Time between two event-stream updates. Default 500. */
  readonly intervalMs?: number
  /** Event streams open at once; one more is answered 503. Default 200. */
  readonly maxStreams?: number
}

/**
 * `GET /dashboard` (the page), `GET /events` (server-sent events: the recent sales and this process's
 * per-strategy figures, every `intervalMs`, from one poll shared by every stream) and `GET /sales` (the recent
 * sales as JSON).
 */
export function registerDashboardRoutes(
  app: FastifyInstance,
  store: SaleStore,
  live: LiveStats,
  options: DashboardOptions = {},
): void {
  const feed = new EventFeed(
    async () => {
      const sales = await store.listSales(RECENT_SALES)
      return `data: ${JSON.stringify({ at: Date.now(), sales, strategies: live.snapshot() })}\n\n`
    },
    options.intervalMs ?? 500,
    options.maxStreams ?? 200,
  )
  app.addHook('preClose', async () => feed.close())

  app.get('/sales', async () => ({ sales: await store.listSales(RECENT_SALES) }))

  app.get('/dashboard', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE))

  app.get('/events', (request, reply) => {
    if (feed.size >= feed.maxStreams) {
      reply.header('retry-after', 5)
      refuse(reply, 503, 'TOO_MANY_STREAMS', `This process serves at most ${feed.maxStreams} event streams`)
      return
    }
    reply.hijack()
    const stream = reply.raw
    stream.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    feed.add(stream)
    request.raw.on('close', () => feed.remove(stream))
  })
}
