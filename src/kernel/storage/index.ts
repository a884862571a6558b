// The store a configuration names, one per configuration object (every context of a process shares it).
import type { Config } from '../config.ts';
import { LocalStore } from './local.ts';
import type { ObjectStore } from './store.ts';

const stores = new WeakMap<Config, ObjectStore>();

export function storageOf(config: Config): ObjectStore {
  let store = stores.get(config);
  if (!store) {
    store = new LocalStore(config.storageDir);
    stores.set(config, store);
  }
  return store;
}
