// The s3 column of the storage benches: the Ceph RADOS Gateway `npm run s3:start` runs (found as the
// tests find it, test/helpers/s3.ts), a fresh SVC_S3_PREFIX per run, and everything under it
// (objects and incomplete uploads) removed when the script ends, also on an error or a signal.
// Without a gateway a bench prints one line naming `npm run s3:start` and skips its s3 column.
import path from 'node:path';
import { S3Store } from '../src/kernel/storage/s3.ts';
import { emptyStore, freshPrefix, s3Env, s3Settings, testGateway } from '../test/helpers/s3.ts';
import { onExit, tempDir, type EnvOverrides } from './lib.ts';

export interface BenchBucket {
  /** The SVC_* settings of the s3 driver under this run's prefix (for `svc serve` and `svc` commands). */
  env: EnvOverrides;
  /** s3://bucket/prefix at the endpoint (no credential). */
  location: string;
  /** A store on the same prefix (closed and emptied at exit). */
  store: S3Store;
}

/** The s3 settings of this run, or null (after printing why) when no gateway answers. */
export async function benchBucket(): Promise<BenchBucket | null> {
  let prefix: string;
  try {
    testGateway();
    prefix = `bench-${freshPrefix()}`;
  } catch {
    process.stdout.write('s3: no S3 gateway found, the s3 column is skipped; start one with `npm run s3:start` (tools/s3/rgw.sh)\n');
    return null;
  }
  const store = new S3Store(s3Settings(prefix), path.join(tempDir('svc-bench-s3-'), 'work'));
  try {
    for await (const _ of store.list('')) break; // answers, and the bucket exists
  } catch (err) {
    await store.close();
    process.stdout.write(`s3: the S3 gateway does not answer (${(err as Error).message}), the s3 column is skipped; start it with \`npm run s3:start\`\n`);
    return null;
  }
  onExit(async () => {
    try {
      await emptyStore(store);
    } finally {
      await store.close();
    }
  });
  return { env: s3Env(prefix), location: store.location, store };
}

/** The local driver, whatever the calling shell set. */
export const LOCAL_ENV: EnvOverrides = { SVC_STORAGE_DRIVER: undefined };
