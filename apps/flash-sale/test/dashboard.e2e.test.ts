import { existsSync } from 'node:fs'
import { type ClientRequest, get } from 'node:http'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSale } from '../src/load/sale-client.js'
import { type RunningService, startService } from '../src/service.js'
import { ADMIN_TOKEN, tempDir } from './support.js'

/** Debian's `chromium` package; override with CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

describe('dashboard in headless Chromium', () => {
  const dir = tempDir()
  let service: RunningService
  let browser: Browser

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`No Chromium at ${CHROMIUM}: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH`)
    }
    service = await startService({
      storeUrl: `sqlite:${join(dir.path, 'store.db')}`,
      backendUrl: 'memory:',
      adminToken: ADMIN_TOKEN,
    })
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await service?.close()
    dir.remove()
  })

  it('shows live stock, sold units and per-strategy latency bars as orders arrive', async () => {
    const page = await browser.newPage()
    await page.goto(`${service.url}/dashboard`)
    await page.getByTestId('status').getByText('live').waitFor()
    const sales = {
      lock: (await createSale(service.url, { item: 'phone', stock: 20, strategy: 'lock' }, ADMIN_TOKEN)).id,
      'db-atomic': (await createSale(service.url, { item: 'tv', stock: 10, strategy: 'db-atomic' }, ADMIN_TOKEN)).id,
    }
    const order = (id: string, user: number) =>
      fetch(`${service.url}/sales/${id}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: `u${user}`, quantity: 1 }),
      })
    await Promise.all(Array.from({ length: 30 }, (_, i) => order(sales.lock, i)))
    await Promise.all(Array.from({ length: 15 }, (_, i) => order(sales['db-atomic'], i)))

    // The page learns everything from the event stream; nothing was reloaded.
    const lockRow = page.getByTestId(`sale-${sales.lock}`)
    await expect.poll(() => lockRow.getByTestId('sold').textContent(), { timeout: 10_000 }).toBe('20')
    expect(await lockRow.getByTestId('remaining').textContent()).toBe('0')
    const tvRow = page.getByTestId(`sale-${sales['db-atomic']}`)
    await expect.poll(() => tvRow.getByTestId('sold').textContent(), { timeout: 10_000 }).toBe('10')
    const lockStats = page.getByTestId('strategy-lock')
    expect(await lockStats.locator('td').nth(3).textContent()).toBe('30')
    expect(await lockStats.locator('td').nth(4).textContent()).toBe('20')
    for (const bar of ['bar-lock-p50', 'bar-lock-p99', 'bar-db-atomic-p50', 'bar-db-atomic-p99']) {
      expect(Number(await page.getByTestId(bar).getAttribute('width'))).toBeGreaterThan(0)
    }
    await page.close()
  }, 60_000)

  it('refused a stream (the process serves its maximum), the page says so and goes live once a place frees', async () => {
    const busy = await startService({
      storeUrl: `sqlite:${join(dir.path, 'busy.db')}`,
      backendUrl: 'memory:',
      maxEventStreams: 1,
    })
    // The only place, taken by another client.
    const holder = await new Promise<ClientRequest>((resolve, reject) => {
      const request = get(`${busy.url}/events`, () => resolve(request)).on('error', reject)
    })
    try {
      const page = await browser.newPage()
      await page.goto(`${busy.url}/dashboard`)
      await page.getByTestId('status').getByText('server busy, retrying…').waitFor()
      holder.destroy()
      // The page retries 5 to 10 s later, by itself.
      await page.getByTestId('status').getByText('live').waitFor({ timeout: 20_000 })
      await page.close()
    } finally {
      holder.destroy()
      await busy.close()
    }
  }, 60_000)
})
