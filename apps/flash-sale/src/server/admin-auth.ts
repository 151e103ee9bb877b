import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { refuse } from './replies.js'

/** Shortest admin token accepted: a guessable token protects nothing. */
export const MIN_ADMIN_TOKEN_LENGTH = 16

/**
 * Throws a RangeError when `token` is set but too short. The message gives the length received, never the token.
 *
 * @example
 * checkAdminToken(process.env.FLASH_SALE_ADMIN_TOKEN)
 */
export function checkAdminToken(token: string | undefined, name = 'adminToken'): void {
  if (token === undefined) return
  if (typeof token !== 'string' || token.length < MIN_ADMIN_TOKEN_LENGTH || /\s/.test(token)) {
    const received = typeof token === 'string' ? `${token.length} characters` : typeof token
    throw new RangeError(
      `${name} must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters without spaces, received ${received}`,
    )
  }
}

/** A random admin token (32 bytes, base64url), e.g. for a demo that starts its own service. */
export function randomAdminToken(): string {
  return randomBytes(32).toString('base64url')
}

/** SHA-256 first, so the comparison is constant-time whatever the lengths (timingSafeEqual needs equal ones). */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/**
 * An `onRequest` hook for the admin routes (sale creation, audit): `Authorization: Bearer <token>` must carry
 * `token`, compared in constant time. 401 without credentials, 403 with wrong ones, and 403 `ADMIN_DISABLED`
 * when the service has no token: admin routes are never open by default.
 *
 * @example
 * app.post('/sales', { onRequest: adminGuard(token) }, createSale)
 */
export function adminGuard(
  token: string | undefined,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined> {
  const expected = token === undefined ? undefined : digest(token)
  return async (request, reply) => {
    if (expected === undefined) {
      return refuse(
        reply,
        403,
        'ADMIN_DISABLED',
        'Admin routes are disabled: start the service with an admin token (FLASH_SALE_ADMIN_TOKEN or --admin-token)',
      )
    }
    const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')
    if (match === null) {
      reply.header('www-authenticate', 'Bearer realm="flash-sale admin"')
      return refuse(reply, 401, 'UNAUTHORIZED', 'This route needs the admin token: Authorization: Bearer <token>')
    }
    if (!timingSafeEqual(digest(match[1] as string), expected)) {
      return refuse(reply, 403, 'FORBIDDEN', 'Wrong admin token')
    }
    return undefined
  }
}
