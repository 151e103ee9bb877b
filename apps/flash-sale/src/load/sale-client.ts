import type { Strategy } from '../store/types.js'
import type { AuditSnapshot } from './invariants.js'

async function json<T>(response: Response, what: string): Promise<T> {
  const body = (await response.json()) as T
  if (!response.ok) throw new Error(`${what} failed: ${response.status} ${JSON.stringify(body)}`)
  return body
}

/** The `Authorization` header of the admin routes; none without a token (the service then refuses them). */
function adminHeaders(adminToken: string | undefined): Record<string, string> {
  return adminToken === undefined ? {} : { authorization: `Bearer ${adminToken}` }
}

/**
 * Creates a sale through the service's API (an admin route: pass the service's admin token).
 *
 * @example
 * const { id } = await createSale(url, { item: 'phone', stock: 100, strategy: 'lock' }, process.env.FLASH_SALE_ADMIN_TOKEN)
 */
export async function createSale(
  url: string,
  sale: { item: string; stock: number; strategy: Strategy; buckets?: number; startsAt?: number },
  adminToken?: string,
): Promise<{ id: string }> {
  const response = await fetch(`${url}/sales`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...adminHeaders(adminToken) },
    body: JSON.stringify(sale),
  })
  return json(response, 'POST /sales')
}

/** Reads `GET /sales/:id/audit` (an admin route: pass the service's admin token). */
export async function getAudit(url: string, saleId: string, adminToken?: string): Promise<AuditSnapshot> {
  const response = await fetch(`${url}/sales/${saleId}/audit`, { headers: adminHeaders(adminToken) })
  return json(response, 'GET /sales/:id/audit')
}

/**
 * For a reserve sale: waits until the store has settled every reservation Redis made (the relay drained the
 * outbox), or `timeoutMs` passed; the audit that follows then compares the two. Other sales return at once.
 */
export async function waitSettled(url: string, saleId: string, timeoutMs = 30_000): Promise<void> {
  const giveUpAt = performance.now() + timeoutMs
  for (;;) {
    const sale = await json<{ reserved?: { unsettled: number } }>(
      await fetch(`${url}/sales/${saleId}`),
      'GET /sales/:id',
    )
    if (sale.reserved === undefined || sale.reserved.unsettled === 0 || performance.now() > giveUpAt) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
