// The kernel's config (src/kernel/config.ts): the service's version, read from package.json; the storage driver's settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ConfigError, loadConfig, VERSION } from '../../src/kernel/config.ts';

test('VERSION is the version of package.json', () => {
  assert.equal(VERSION, JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
});

const S3_ENV = {
  SVC_STORAGE_DRIVER: 's3', SVC_S3_BUCKET: 'media', SVC_S3_ACCESS_KEY_ID: 'AKIDEXAMPLEKEYID', SVC_S3_SECRET_ACCESS_KEY: 'very-secret-access-key',
};

test('the storage driver is local unless SVC_STORAGE_DRIVER says s3', () => {
  const c = loadConfig({}, { PLATFORM_S3_ENDPOINT: 'http://s3.example', SVC_S3_ENDPOINT: 'http://s3.example' }, '/tmp');
  assert.equal(c.storageDriver, 'local');
  assert.equal(c.s3Region, 'us-east-1');
  assert.equal(c.s3ForcePathStyle, false);
  assert.equal(c.storageUrlTtlSeconds, 300);
  const s3 = loadConfig({}, { ...S3_ENV, SVC_S3_ENDPOINT: 'http://127.0.0.1:7480/', SVC_S3_FORCE_PATH_STYLE: '1', SVC_S3_PREFIX: 'studio-a/' }, '/tmp');
  assert.equal(s3.storageDriver, 's3');
  assert.equal(s3.s3Endpoint, 'http://127.0.0.1:7480');
  assert.equal(s3.s3ForcePathStyle, true);
  assert.equal(s3.s3Prefix, 'studio-a/');
  assert.throws(() => loadConfig({}, { SVC_STORAGE_DRIVER: 'ftp' }, '/tmp'), ConfigError);
});

test('the s3 driver refuses to start without a bucket, credentials or an http(s) endpoint, naming no secret', () => {
  const refused = (env: Record<string, string>, pattern: RegExp) => assert.throws(() => loadConfig({}, env, '/tmp'), (err: Error) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes(S3_ENV.SVC_S3_SECRET_ACCESS_KEY) && !err.message.includes(S3_ENV.SVC_S3_ACCESS_KEY_ID));
    return true;
  });
  refused({ ...S3_ENV, SVC_S3_BUCKET: '' }, /SVC_S3_BUCKET/);
  refused({ ...S3_ENV, SVC_S3_ACCESS_KEY_ID: '' }, /SVC_S3_ACCESS_KEY_ID/);
  refused({ ...S3_ENV, SVC_S3_SECRET_ACCESS_KEY: '' }, /SVC_S3_SECRET_ACCESS_KEY/);
  for (const endpoint of ['ftp://s3.example', 'not a url', 'http://user:pw@s3.example', 'https://s3.example/?x=1']) refused({ ...S3_ENV, SVC_S3_ENDPOINT: endpoint }, /SVC_S3_ENDPOINT/);
  for (const prefix of ['../up', '/abs', 'a//b', 'a/./b', 'sp ace']) refused({ SVC_S3_PREFIX: prefix }, /SVC_S3_PREFIX/);
  // Unused S3 settings are not checked while the driver is local.
  assert.equal(loadConfig({}, { SVC_S3_ENDPOINT: 'ftp://nowhere' }, '/tmp').storageDriver, 'local');
  assert.equal(loadConfig({}, { ...S3_ENV, SVC_STORAGE_URL_TTL_SECONDS: '60' }, '/tmp').storageUrlTtlSeconds, 60);
  assert.throws(() => loadConfig({}, { SVC_STORAGE_URL_TTL_SECONDS: '604801' }, '/tmp'), ConfigError);
});

test('the business database is SQLite unless SVC_DATABASE says postgres, which needs a postgres:// URL named by no secret', () => {
  assert.equal(loadConfig({}, { PLATFORM_POSTGRES_URL: 'postgres://u:p@db/svc' }, '/tmp').database, 'sqlite');
  const url = 'postgres://svc:hunter2-password@db.internal:5432/svc';
  const pg = loadConfig({}, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url, SVC_POSTGRES_POOL: '3' }, '/tmp');
  assert.deepEqual([pg.database, pg.postgresUrl, pg.postgresPoolSize], ['postgres', url, 3]);
  assert.equal(loadConfig({}, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url }, '/tmp').postgresPoolSize, 10);
  for (const [env, pattern] of [
    [{ SVC_DATABASE: 'postgres' }, /needs SVC_POSTGRES_URL/],
    [{ SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: 'mysql://svc:hunter2-password@db/svc' }, /postgres:\/\//],
    [{ SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: 'hunter2-password' }, /postgres:\/\//],
    [{ SVC_DATABASE: 'mysql' }, /SVC_DATABASE/],
  ] as const) {
    assert.throws(() => loadConfig({}, env, '/tmp'), (err: Error) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, pattern);
      assert.ok(!err.message.includes('hunter2'), 'no password in the message');
      return true;
    });
  }
});
