/** A ZooKeeper error code (KeeperException.Code) as the wire client reports it: the shape of node-zookeeper-client's. */
import type { ZkErrorLike } from '../zk-client.js'

const NAMES: Readonly<Record<number, string>> = {
  [-1]: 'SYSTEM_ERROR',
  [-2]: 'RUNTIME_INCONSISTENCY',
  [-3]: 'DATA_INCONSISTENCY',
  [-4]: 'CONNECTION_LOSS',
  [-5]: 'MARSHALLING_ERROR',
  [-6]: 'UNIMPLEMENTED',
  [-7]: 'OPERATION_TIMEOUT',
  [-8]: 'BAD_ARGUMENTS',
  [-100]: 'API_ERROR',
  [-101]: 'NO_NODE',
  [-102]: 'NO_AUTH',
  [-103]: 'BAD_VERSION',
  [-108]: 'NO_CHILDREN_FOR_EPHEMERALS',
  [-110]: 'NODE_EXISTS',
  [-111]: 'NOT_EMPTY',
  [-112]: 'SESSION_EXPIRED',
  [-113]: 'INVALID_CALLBACK',
  [-114]: 'INVALID_ACL',
  [-115]: 'AUTH_FAILED',
  [-118]: 'SESSION_MOVED',
  [-119]: 'NOT_READ_ONLY',
}

export class ZkWireError extends Error implements ZkErrorLike {
  override readonly name: string

  constructor(
    readonly code: number,
    /** What was asked, e.g. `getChildren /latchkey/a`. */
    what: string,
  ) {
    const name = NAMES[code] ?? 'UNKNOWN'
    super(`${name}[${code}] on ${what}`)
    this.name = name
  }

  override toString(): string {
    return `ZooKeeper ${this.message}`
  }
}
