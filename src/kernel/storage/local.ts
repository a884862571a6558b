// The `local` driver: objects are files under the storage root (SVC_STORAGE_DIR), keys their relative
// paths. Writes stream into tmp/ and are renamed into place (same file system, so atomic); reads
// resolve the key safely (no "..", not absolute, and the real path, symbolic links followed, inside the
// root). No signed URLs: the service streams the bytes itself.
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { AppError } from '../errors.ts';
import { receiveInto, resolveStored, SNIFF_BYTES, storedTarget } from '../files.ts';
import { sha256Hex } from '../ids.ts';
import type { ByteRange, IncompleteUpload, LocalCopy, ObjectStore, PendingWrite, StoredObject, WriteCheck, Written } from './store.ts';
import { tempKey } from './store.ts';

const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException)?.code;

export class LocalStore implements ObjectStore {
  readonly driver = 'local' as const;
  readonly root: string;
  readonly location: string;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.location = this.root;
  }

  /** The absolute path a key is written to (checked lexically; the file need not exist). */
  target(key: string): string {
    return storedTarget(this.root, key, true);
  }

  /** The absolute path of an existing object (404 when missing, 422 when it leaves the root). */
  resolve(key: string): string {
    return resolveStored(this.root, key);
  }

  async write(source: Readable | AsyncIterable<Buffer>, check: WriteCheck = () => {}): Promise<PendingWrite> {
    const tmpKey = tempKey('upload');
    const tmp = this.target(tmpKey);
    fs.mkdirSync(path.dirname(tmp), { recursive: true });
    const got = await receiveInto(tmp, source, check);
    return this.pending(tmpKey, got);
  }

  private pending(tmpKey: string, got: Written): PendingWrite {
    const tmp = this.target(tmpKey);
    let done = false;
    return {
      ...got,
      tmpKey,
      place: async (key, opts) => {
        if (done) throw new Error('this write was already placed or discarded');
        const dest = this.target(key);
        fs.mkdirSync(path.dirname(dest), { recursive: true });
        if (opts?.replace) {
          fs.renameSync(tmp, dest);
          done = true;
          return true;
        }
        // A hard link never replaces an existing file: the first writer of a key wins.
        try {
          fs.linkSync(tmp, dest);
        } catch (err) {
          if (errCode(err) !== 'EEXIST') throw err;
          fs.rmSync(tmp, { force: true });
          done = true;
          return false;
        }
        fs.rmSync(tmp, { force: true });
        done = true;
        return true;
      },
      discard: async () => {
        if (done) return;
        done = true;
        fs.rmSync(tmp, { force: true });
      },
    };
  }

  /** Fills a new temporary file with `fill`, then renames it to `key` (replacing what is there); the temporary never stays. */
  private async intoPlace<T>(key: string, kind: string, fill: (tmp: string) => Promise<T>): Promise<T> {
    const dest = this.target(key);
    const tmp = this.target(tempKey(kind));
    fs.mkdirSync(path.dirname(tmp), { recursive: true });
    try {
      const got = await fill(tmp);
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      fs.renameSync(tmp, dest);
      return got;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  async putFile(key: string, file: string): Promise<Written> {
    // One read of the file: counted, hashed and copied in the same pass.
    return this.intoPlace(key, 'put', (tmp) => receiveInto(tmp, fs.createReadStream(file, { highWaterMark: 1 << 20 }), () => {}));
  }

  async putBytes(key: string, bytes: Buffer): Promise<Written> {
    return this.intoPlace(key, 'put', async (tmp) => {
      fs.writeFileSync(tmp, bytes, { flag: 'wx', flush: true });
      return { size: bytes.length, sha256: sha256Hex(bytes), head: Buffer.from(bytes.subarray(0, SNIFF_BYTES)) };
    });
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.resolve(key);
    const stream = fs.createReadStream(file, { highWaterMark: 1 << 20, ...(range ? { start: range.start, end: range.end } : {}) });
    // Opening errors (gone meanwhile) surface on the first read; wait for the open so they surface here.
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    }).catch((err: unknown) => {
      if (errCode(err) === 'ENOENT') throw this.missing();
      throw err;
    });
    return stream;
  }

  async readBytes(key: string): Promise<Buffer> {
    try {
      return await fs.promises.readFile(this.resolve(key));
    } catch (err) {
      if (errCode(err) === 'ENOENT') throw this.missing();
      throw err;
    }
  }

  async stat(key: string): Promise<StoredObject | null> {
    let file: string;
    try {
      file = this.resolve(key);
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return null;
      throw err;
    }
    try {
      const st = await fs.promises.stat(file, { bigint: true });
      if (!st.isFile()) return null;
      return {
        key, size: Number(st.size), modifiedAt: new Date(Number(st.mtimeMs)),
        version: [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':'),
      };
    } catch (err) {
      if (errCode(err) === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    fs.rmSync(this.target(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<void> {
    if (prefix === '' || prefix === '/') throw new Error('deletePrefix: refusing to remove every object');
    if (prefix.endsWith('/')) {
      // A folder, with everything under it (a symbolic link inside is removed, never followed).
      fs.rmSync(this.target(prefix.slice(0, -1)), { recursive: true, force: true });
      return;
    }
    for await (const o of this.list(prefix)) await this.delete(o.key);
  }

  async move(from: string, to: string): Promise<void> {
    const src = this.resolve(from);
    const dest = this.target(to);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.renameSync(src, dest);
  }

  async copy(from: string, to: string): Promise<void> {
    const src = this.resolve(from);
    await this.intoPlace(to, 'copy', (tmp) => fs.promises.copyFile(src, tmp));
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const slash = prefix.lastIndexOf('/');
    const dir = slash < 0 ? '' : prefix.slice(0, slash);
    if (dir && (storedTargetOrNull(this.root, dir) === null || !(await this.plainDir(dir)))) return;
    yield* this.walk(dir, prefix);
  }

  /** Whether every segment of `dir` is a directory and none a symbolic link (a list never goes through one). */
  private async plainDir(dir: string): Promise<boolean> {
    let cur = this.root;
    for (const seg of dir.split('/')) {
      cur = path.join(cur, seg);
      try {
        if (!(await fs.promises.lstat(cur)).isDirectory()) return false;
      } catch {
        return false;
      }
    }
    return true;
  }

  private async *walk(dir: string, prefix: string): AsyncIterable<StoredObject> {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(dir ? path.join(this.root, dir) : this.root, { withFileTypes: true });
    } catch (err) {
      if (errCode(err) === 'ENOENT' || errCode(err) === 'ENOTDIR') return;
      throw err;
    }
    // Key order: a folder sorts as its name followed by '/', as its keys do.
    const named = entries.filter((e) => !e.isSymbolicLink() && (e.isFile() || e.isDirectory()))
      .map((e) => ({ e, sortKey: e.isDirectory() ? `${e.name}/` : e.name }))
      .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
    for (const { e } of named) {
      const key = dir ? `${dir}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* this.walk(key, prefix);
        continue;
      }
      if (!key.startsWith(prefix)) continue;
      let st: fs.BigIntStats;
      try {
        st = await fs.promises.lstat(path.join(this.root, key), { bigint: true });
      } catch {
        continue; // removed meanwhile
      }
      if (!st.isFile()) continue;
      yield { key, size: Number(st.size), modifiedAt: new Date(Number(st.mtimeMs)), version: [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':') };
    }
  }

  async signedUrl(): Promise<string | null> {
    return null;
  }

  async mediaInput(key: string): Promise<string> {
    return this.resolve(key);
  }

  async localCopy(key: string): Promise<LocalCopy> {
    return { path: this.resolve(key), release: async () => {} };
  }

  /** A folder has no multipart uploads. */
  async *incompleteUploads(): AsyncIterable<IncompleteUpload> {}

  async abortUpload(): Promise<void> {}

  private missing(): AppError {
    return new AppError(404, 'not_found', 'the file is registered but not in storage');
  }
}

function storedTargetOrNull(root: string, rel: string): string | null {
  try {
    return storedTarget(root, rel);
  } catch {
    return null;
  }
}
