import { readFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { SaleStore } from '../store/types.js'
import type { LiveStats } from './live-stats.js'

const PAGE = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8')

/** Sales shown on the dashboard and listed by `GET /sales`. */
const RECENT_SALES = 20

/**
 * `GET /dashboard` (the page), `GET /events` (server-sent events: the recent sales and this process's
 * per-strategy figures, every `intervalMs`) and `GET /sales` (the recent sales as JSON).
 */
export function registerDashboardRoutes(
  app: FastifyInstance,
  store: SaleStore,
  live: LiveStats,
  intervalMs = 500,
): void {
  const streams = new Set<ServerResponse>()
  // Open event streams would keep app.close() waiting forever: end them first.
  app.addHook('preClose', async () => {
    for (const stream of streams) stream.end()
  })

  app.get('/sales', async () => ({ sales: await store.listSales(RECENT_SALES) }))

  app.get('/dashboard', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE))

  app.get('/events', (request, reply) => {
    reply.hijack()
    const stream = reply.raw
    stream.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    streams.add(stream)
    let busy = false
    const push = async (): Promise<void> => {
      if (busy) return
      busy = true
      try {
        const sales = await store.listSales(RECENT_SALES)
        stream.write(`data: ${JSON.stringify({ at: Date.now(), sales, strategies: live.snapshot() })}\n\n`)
      } catch (error) {
        stream.write(`event: failure\ndata: ${JSON.stringify(String(error))}\n\n`)
      } finally {
        busy = false
      }
    }
    const timer = setInterval(() => void push(), intervalMs)
    void push()
    request.raw.on('close', () => {
      clearInterval(timer)
      streams.delete(stream)
    })
  })
}
