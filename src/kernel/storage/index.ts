// The store a configuration names, one per configuration object (every context of a process shares
// it). SVC_STORAGE_DRIVER alone chooses the driver: S3 is never activated by anything else (a
// PLATFORM_* variable only marks a readiness target as configured).
import type { Config } from '../config.ts';
import { LocalStore } from './local.ts';
import { S3Store, type S3Settings } from './s3.ts';
import type { ObjectStore, StorageDriver } from './store.ts';

const stores = new WeakMap<Config, ObjectStore>();

export function storageOf(config: Config): ObjectStore {
  let store = stores.get(config);
  if (!store) {
    store = createStore(config, config.storageDriver);
    stores.set(config, store);
  }
  return store;
}

/** A new store of `driver` with the configuration's settings (`svc storage migrate` builds the other driver's store with it). */
export function createStore(config: Config, driver: StorageDriver): ObjectStore {
  return driver === 's3' ? new S3Store(s3SettingsOf(config), config.storageDir) : new LocalStore(config.storageDir);
}

export function s3SettingsOf(config: Config): S3Settings {
  return {
    endpoint: config.s3Endpoint, bucket: config.s3Bucket, region: config.s3Region, forcePathStyle: config.s3ForcePathStyle,
    prefix: config.s3Prefix, accessKeyId: config.s3AccessKeyId, secretAccessKey: config.s3SecretAccessKey,
    sessionToken: config.s3SessionToken, urlTtlSeconds: config.storageUrlTtlSeconds,
  };
}
