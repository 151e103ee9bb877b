import type { FastifyReply } from 'fastify'

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  425: 'Too Early',
  503: 'Service Unavailable',
}

/**
 * Sends Fastify's error shape (`statusCode`, `code`, `error`, `message`), so schema failures and the
 * service's own refusals look the same to a client.
 *
 * @example
 * return refuse(reply, 409, 'SOLD_OUT', `Sale ${id} is sold out`)
 */
export function refuse(reply: FastifyReply, statusCode: number, code: string, message: string): FastifyReply {
  return reply.code(statusCode).send({ statusCode, code, error: REASONS[statusCode] ?? 'Error', message })
}

/** A 400 in the shape of Fastify's schema errors, for checks a JSON schema cannot express. */
export function badRequest(reply: FastifyReply, message: string): FastifyReply {
  return refuse(reply, 400, 'FST_ERR_VALIDATION', message)
}
