/**
 * Bad backend URLs fail with a TypeError / RangeError naming the part, before any client is built. Before
 * these checks, `zookeeper://127.0.0.1:abc` or `zookeeper://u:pw@host` opened a backend whose first call
 * killed the process (node-zookeeper-client passes the port to net.connect in a socket callback), mysql2
 * turned port 0 into 3306, ioredis read `redis:/host` as host "redis", and misspelled options were ignored.
 */
import { describe, expect, it } from 'vitest'
import { backendFromUrl } from '../src/backend-url.js'
import { etcdBackend } from '../src/backends/etcd/index.js'
import { parseZookeeperUrl, zookeeperBackend } from '../src/backends/zookeeper/index.js'

/** Each scheme with a good URL whose `{hp}` is replaced by a host:port and `{q}` by a query. */
const SCHEMES: Array<[string, string]> = [
  ['redis', 'redis://{hp}/0{q}'],
  ['rediss', 'rediss://{hp}/0{q}'],
  ['redlock', 'redlock://{hp},127.0.0.1:6382,127.0.0.1:6383{q}'],
  ['zookeeper', 'zookeeper://{hp}/app{q}'],
  ['etcd', 'etcd://{hp}{q}'],
  ['mysql', 'mysql://root@{hp}/test{q}'],
  ['postgres', 'postgres://postgres@{hp}/test{q}'],
  ['postgresql', 'postgresql://postgres@{hp}/test{q}'],
]

const url = (template: string, hp: string, q = '') => template.replace('{hp}', hp).replace('{q}', q)

/** The rejection of `backendFromUrl(u)` (fails the test if it opened a backend, after closing it). */
async function rejection(u: string): Promise<Error> {
  let backend: Awaited<ReturnType<typeof backendFromUrl>> | undefined
  try {
    backend = await backendFromUrl(u)
  } catch (error) {
    return error as Error
  }
  await backend.close()
  throw new Error(`backendFromUrl(${JSON.stringify(u)}) opened a ${backend.name} backend`)
}

describe('backendFromUrl checks every part before building a client', () => {
  for (const [scheme, template] of SCHEMES) {
    it.each(['abc', '0', '70000', '', '-1', '65536', '1.5'])(
      `${scheme}: port %j is a RangeError naming the port`,
      async (port) => {
        const error = await rejection(url(template, `127.0.0.1:${port}`))
        expect(error).toBeInstanceOf(RangeError)
        expect(error.message).toContain(`port ${JSON.stringify(port)}`)
        expect(error.message).toContain('1 to 65535')
      },
    )

    it(`${scheme}: a bad host, an empty host list entry and an unknown query option are RangeErrors`, async () => {
      await expect(rejection(url(template, 'bad host:1'))).resolves.toBeInstanceOf(RangeError)
      await expect(rejection(url(template, 'h_ok:1,'))).resolves.toBeInstanceOf(RangeError)
      const unknown = await rejection(url(template, '127.0.0.1:1', '?stratgy=table'))
      expect(unknown).toBeInstanceOf(RangeError)
      expect(unknown.message).toMatch(/unknown option "stratgy".*known options: /)
      const noSlashes = await rejection(url(template, '127.0.0.1:1').replace('://', ':/'))
      expect(noSlashes).toBeInstanceOf(RangeError)
      expect(noSlashes.message).toContain('two slashes')
    })
  }

  it('zookeeper and etcd URLs reject credentials they cannot use, password hidden', async () => {
    for (const u of ['zookeeper://u:pw-1@127.0.0.1:2181', 'etcd://u:pw-1@127.0.0.1:2379']) {
      const error = await rejection(u)
      expect(error).toBeInstanceOf(RangeError)
      expect(error.message).toContain('cannot carry credentials')
      expect(error.message).not.toContain('pw-1')
    }
  })

  it('a zookeeper URL rejects the misspelled sessionTimeout and a bad chroot', async () => {
    expect((await rejection('zookeeper://127.0.0.1:2181?sessionTimeout=6000')).message).toContain(
      'known options: sessionTimeoutMs, connectTimeoutMs, root, lockNodeIdleMs',
    )
    expect((await rejection('zookeeper://127.0.0.1:2181?sessionTimeoutMs=abc')).message).toContain('sessionTimeoutMs')
    expect(await rejection('zookeeper://127.0.0.1:2181/a//b')).toBeInstanceOf(RangeError)
    expect((await rejection('zookeeper://127.0.0.1:2181?layout=kazoo')).message).toContain('latchkey, curator')
    expect(parseZookeeperUrl('zookeeper://127.0.0.1:2181/app?layout=curator&root=/')).toEqual({
      connectString: '127.0.0.1:2181/app',
      layout: 'curator',
      root: '/',
    })
    expect(() => zookeeperBackend({ connectString: '127.0.0.1:2181', layout: 'kazoo' as never })).toThrow(RangeError)
  })

  it('redis and redlock paths must be a database number; SQL paths one database name', async () => {
    for (const u of ['redis://127.0.0.1:6379/abc', 'redis://127.0.0.1:6379/1/2', 'redlock://127.0.0.1:6381/x']) {
      expect((await rejection(u)).message).toContain('database number')
    }
    expect((await rejection('mysql://root@127.0.0.1:3306/a/b')).message).toContain('one database name')
    expect((await rejection('postgres://postgres@127.0.0.1:5432/a/b')).message).toContain('one database name')
    expect((await rejection('etcd://127.0.0.1:2379/locks')).message).toContain('no path')
  })

  it('single-server schemes reject a host list; option values are checked', async () => {
    expect((await rejection('redis://127.0.0.1:6379,127.0.0.1:6380/0')).message).toContain('one server')
    expect((await rejection('mysql://root@127.0.0.1:3306/test?strategy=tabel')).message).toContain(
      'strategy must be one of',
    )
    expect((await rejection('postgres://postgres@127.0.0.1:5432/test?max=0')).message).toContain('max')
    expect((await rejection('redlock://127.0.0.1:6381?quorum=x')).message).toContain('quorum')
  })

  it('memory and sqlite take no options, unknown schemes are named', async () => {
    expect(await rejection('memory:?x=1')).toBeInstanceOf(RangeError)
    expect(await rejection('memory://somewhere')).toBeInstanceOf(RangeError)
    expect((await rejection('sqlite:./x.db?mode=ro')).message).toContain('takes no options')
    expect((await rejection('ftp://u:pw-2@x')).message).toMatch(/unknown backend URL scheme "ftp:"/)
    expect(await rejection('no scheme here')).toBeInstanceOf(RangeError)
  })

  it('zookeeperBackend and etcdBackend check their connect string / hosts the same way', () => {
    expect(() => zookeeperBackend({ connectString: '127.0.0.1:abc' })).toThrow(RangeError)
    expect(() => zookeeperBackend({ connectString: 'u:pw@127.0.0.1:2181' })).toThrow(/cannot carry credentials/)
    expect(() => zookeeperBackend({ connectString: '127.0.0.1:70000/app' })).toThrow(/port "70000"/)
    expect(() => etcdBackend({ hosts: 'http://127.0.0.1:0' })).toThrow(/port "0"/)
    expect(() => etcdBackend({ hosts: ['http://u:pw-3@127.0.0.1:2379'] })).toThrow(/cannot carry credentials/)
    expect(() => etcdBackend({ hosts: ['ftp://127.0.0.1:2379'] })).toThrow(RangeError)
  })
})
