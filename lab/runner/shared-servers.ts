/**
 * The machine's shared servers the lab runs against when a scenario does not fault the server itself (their URLs
 * overridable by environment variables). Only the lab's clients are paused there: the servers must never be stopped.
 */
export const SHARED_POSTGRES_URL = process.env.LAB_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const SHARED_MYSQL_URL = process.env.LAB_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
export const SHARED_ZK_HOSTS = process.env.LAB_ZK_HOSTS ?? '127.0.0.1:2181'
export const SHARED_ETCD_HOSTS = process.env.LAB_ETCD_HOSTS ?? '127.0.0.1:2379'
