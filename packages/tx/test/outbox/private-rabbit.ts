/**
 * A private RabbitMQ node for the broker-restart test: its own port (LATCHKEY_RABBITMQ_RESTART_PORT, default
 * 5699), node name and data under `.data/rabbitmq/`, started and stopped through `scripts/servers/rabbitmq.sh`.
 * The machine's shared broker on 5672 is never stopped or restarted.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const SCRIPT = fileURLToPath(new URL('../../../../scripts/servers/rabbitmq.sh', import.meta.url))

export const PRIVATE_RABBIT_PORT = Number(process.env.LATCHKEY_RABBITMQ_RESTART_PORT ?? 5699)
export const PRIVATE_RABBIT_URL = `amqp://guest:guest@127.0.0.1:${PRIVATE_RABBIT_PORT}`

const script = (command: 'start' | 'stop') =>
  run(SCRIPT, [command], {
    env: { ...process.env, LATCHKEY_RABBITMQ_PORT: String(PRIVATE_RABBIT_PORT) },
    timeout: 240_000,
  })

/** Starts the private node unless it answers already (idempotent). */
export async function startPrivateRabbit(): Promise<void> {
  await script('start')
}

/** Stops the private node (only when the script started it). */
export async function stopPrivateRabbit(): Promise<void> {
  await script('stop')
}
