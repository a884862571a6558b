// The S3-compatible server the tests use: a real Ceph RADOS Gateway started by tools/s3/rgw.sh
// (`npm run s3:start`), found by the SVC_TEST_S3_* variables or the state file the script writes
// (${SVC_RGW_DIR:-${TMPDIR:-/tmp}/svc-rgw}/s3.env). Each test gets a fresh key prefix in the shared
// bucket, and everything under it (objects and incomplete uploads) is removed after the test.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { S3Store, type S3Settings, type S3Tuning } from '../../src/kernel/storage/s3.ts';

export interface TestGateway { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string }

export const RGW_STATE_FILE = path.join(process.env.SVC_RGW_DIR || path.join(process.env.TMPDIR || os.tmpdir(), 'svc-rgw'), 's3.env');

export const NO_GATEWAY = `no test S3 gateway: start one with \`npm run s3:start\` (tools/s3/rgw.sh; needs the Debian packages radosgw ceph-mon ceph-osd: apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd), or set SVC_TEST_S3_ENDPOINT, SVC_TEST_S3_BUCKET, SVC_TEST_S3_ACCESS_KEY_ID and SVC_TEST_S3_SECRET_ACCESS_KEY (state file looked for: ${RGW_STATE_FILE})`;

function readStateFile(): Record<string, string> {
  let text: string;
  try {
    text = fs.readFileSync(RGW_STATE_FILE, 'utf8');
  } catch {
    return {};
  }
  return Object.fromEntries(text.split('\n').map((l) => /^([A-Z0-9_]+)=(.*)$/.exec(l.trim())).filter((m) => m !== null).map((m) => [m[1], m[2]]));
}

/** The running test gateway; throws NO_GATEWAY when there is none. */
export function testGateway(): TestGateway {
  const fromEnv = process.env.SVC_TEST_S3_ENDPOINT ? process.env : readStateFile();
  const g = {
    endpoint: fromEnv.SVC_TEST_S3_ENDPOINT ?? '', bucket: fromEnv.SVC_TEST_S3_BUCKET ?? '', region: fromEnv.SVC_TEST_S3_REGION || 'us-east-1',
    accessKeyId: fromEnv.SVC_TEST_S3_ACCESS_KEY_ID ?? '', secretAccessKey: fromEnv.SVC_TEST_S3_SECRET_ACCESS_KEY ?? '',
  };
  if (!g.endpoint || !g.bucket || !g.accessKeyId || !g.secretAccessKey) throw new Error(NO_GATEWAY);
  return g;
}

/** A fresh key prefix for one test (letters, digits, '-'; ends with '/'). */
export const freshPrefix = (): string => `t-${process.pid}-${randomBytes(6).toString('hex')}/`;

/** The SVC_* settings of the s3 driver on the test gateway under `prefix`. */
export function s3Env(prefix: string, g = testGateway()): Record<string, string> {
  return {
    SVC_STORAGE_DRIVER: 's3', SVC_S3_ENDPOINT: g.endpoint, SVC_S3_BUCKET: g.bucket, SVC_S3_REGION: g.region,
    SVC_S3_FORCE_PATH_STYLE: '1', SVC_S3_PREFIX: prefix, SVC_S3_ACCESS_KEY_ID: g.accessKeyId, SVC_S3_SECRET_ACCESS_KEY: g.secretAccessKey,
  };
}

export function s3Settings(prefix: string, g = testGateway()): S3Settings {
  return {
    endpoint: g.endpoint, bucket: g.bucket, region: g.region, forcePathStyle: true, prefix,
    accessKeyId: g.accessKeyId, secretAccessKey: g.secretAccessKey, sessionToken: '', urlTtlSeconds: 300,
  };
}

/** Removes every object and incomplete upload under the store's prefix. */
export async function emptyStore(store: S3Store): Promise<void> {
  for await (const u of store.incompleteUploads('')) await store.abortUpload(u);
  const keys: string[] = [];
  for await (const o of store.list('')) keys.push(o.key);
  for (const k of keys) await store.delete(k);
}

/**
 * Removes, after the test, everything under `prefix` on the test gateway (objects and incomplete
 * uploads), whichever store wrote it.
 */
export function cleanUpPrefix(t: TestContext, prefix: string, workDir: string): void {
  t.after(async () => {
    const cleaner = new S3Store(s3Settings(prefix), workDir);
    try {
      await emptyStore(cleaner);
    } finally {
      await cleaner.close();
    }
  });
}

/** An S3Store on the test gateway under a fresh prefix, emptied and closed after the test. */
export function testS3Store(t: TestContext, workDir: string, tuning: S3Tuning = {}): S3Store {
  const store = new S3Store(s3Settings(freshPrefix()), workDir, tuning);
  t.after(async () => {
    try {
      await emptyStore(store);
    } finally {
      await store.close();
    }
  });
  return store;
}
