/**
 * The XA transaction ids of latchkey-tx's branches. The global transaction's gid and the branch id are both in
 * the XID, so the recovery sweep finds exactly ours among every prepared transaction on a server and knows
 * which log entry decides each one, without a lookup table.
 *
 * - MariaDB / MySQL: `XA START 'gid', 'branch', 1280005208`: gtrid = the gid (at most 64 bytes, the server's
 *   limit), bqual = the branch id, formatID = 0x4C4B5458 ("LKTX"), so `XA RECOVER` rows are ours by formatID.
 * - PostgreSQL: `PREPARE TRANSACTION 'lktx:<gid>:<branch>'` (at most 200 bytes); `pg_prepared_xacts` rows are
 *   ours by that prefix and the current database.
 */

/** The formatID of every latchkey-tx XID on MariaDB / MySQL: "LKTX" in ASCII. */
export const XA_FORMAT_ID = 0x4c4b5458

/** The prefix of every latchkey-tx transaction id on PostgreSQL. */
export const PG_GID_PREFIX = 'lktx:'

/** One XA branch: its global transaction and its branch id (`b1`, `b2`, … in the order they started). */
export interface Xid {
  readonly gid: string
  readonly branch: string
}

/** MariaDB's limit on gtrid and bqual. */
export const MYSQL_XID_PART_MAX = 64

/** The `'gtrid', 'bqual', formatID` triple of an XA statement (ids are checked to hold no quote). */
export function mysqlXid(xid: Xid): string {
  return `'${xid.gid}', '${xid.branch}', ${XA_FORMAT_ID}`
}

/** The PostgreSQL transaction id of a branch. */
export function pgXid(xid: Xid): string {
  return `${PG_GID_PREFIX}${xid.gid}:${xid.branch}`
}

/** Reads a PostgreSQL transaction id back; undefined when it is not one of ours. */
export function parsePgXid(text: string): Xid | undefined {
  if (!text.startsWith(PG_GID_PREFIX)) return undefined
  const rest = text.slice(PG_GID_PREFIX.length)
  // A gid may hold ':' but a branch id never does: the branch is after the last one.
  const cut = rest.lastIndexOf(':')
  if (cut <= 0 || cut === rest.length - 1) return undefined
  return { gid: rest.slice(0, cut), branch: rest.slice(cut + 1) }
}

/** Reads one `XA RECOVER` row back; undefined when it is not one of ours. */
export function parseMysqlRecoverRow(row: Record<string, unknown>): Xid | undefined {
  if (Number(row.formatID) !== XA_FORMAT_ID) return undefined
  const g = Number(row.gtrid_length)
  const b = Number(row.bqual_length)
  const data = Buffer.isBuffer(row.data) ? row.data : Buffer.from(String(row.data), 'binary')
  if (!Number.isInteger(g) || !Number.isInteger(b) || data.length < g + b) return undefined
  return { gid: data.subarray(0, g).toString('utf8'), branch: data.subarray(g, g + b).toString('utf8') }
}
