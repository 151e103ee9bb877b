import { describe, expect, it } from 'vitest'
import { redactText, redactUrl } from './redact-url.js'

describe('redactUrl', () => {
  it('hides the password and keeps user, hosts, port, path and harmless query keys', () => {
    expect(redactUrl('postgres://postgres:s3cret@db:5432/shop?sslmode=require')).toBe(
      'postgres://postgres:***@db:5432/shop?sslmode=require',
    )
    expect(redactUrl('redis://:s3cret@127.0.0.1:6379/0')).toBe('redis://:***@127.0.0.1:6379/0')
    expect(redactUrl('zookeeper://u:p@ss@h1:2181,h2:2181/chroot')).toBe('zookeeper://u:***@h1:2181,h2:2181/chroot')
    expect(redactUrl('mysql://root@127.0.0.1:3306/test')).toBe('mysql://root@127.0.0.1:3306/test')
    expect(redactUrl('amqp://guest:guest@127.0.0.1:5672')).toBe('amqp://guest:***@127.0.0.1:5672')
  })

  it('hides secret query parameters', () => {
    expect(redactUrl('etcd://h:2379?password=s3cret&x=1')).toBe('etcd://h:2379?password=***&x=1')
    expect(redactUrl('mysql://h/db?user=a&PASSWORD=s3cret#f')).toBe('mysql://h/db?user=a&PASSWORD=***#f')
  })

  it('leaves what is not a URL alone', () => {
    expect(redactUrl('sqlite:./locks.db')).toBe('sqlite:./locks.db')
    expect(redactUrl('not a url')).toBe('not a url')
  })

  it('redacts URLs and known secrets inside free text', () => {
    expect(redactText('connect to redis://:s3cret@h:6379 failed (auth s3cret)', ['s3cret'])).toBe(
      'connect to redis://:***@h:6379 failed (auth ***)',
    )
  })
})
