// The `s3` driver: objects in one bucket of any S3-compatible service (AWS S3, Ceph RGW, MinIO, R2),
// under SVC_S3_PREFIX, keys the same relative paths as on the local driver. Writes stream to a
// temporary key (a multipart upload, hashed SHA-256 on the way: the service's hash is the truth, S3
// has no whole-object SHA-256 of a multipart upload) and are moved into place by a server-side copy.
// Readers get byte ranges; ffmpeg gets a signed URL; tools that need a file get a staged copy.
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as ClientS3 from '@aws-sdk/client-s3';
import { measuring, storedPathProblem, unsafePath, SNIFF_BYTES } from '../files.ts';
import { sha256Hex } from '../ids.ts';
import { createClient, isMissing, missingObject, storageError, type S3Settings, type Sdk } from './s3-client.ts';
import type { ByteRange, IncompleteUpload, LocalCopy, ObjectStore, PendingWrite, SignedUrlOptions, StoredObject, WriteCheck, Written } from './store.ts';
import { tempKey } from './store.ts';

export type { S3Settings } from './s3-client.ts';

const MiB = 1024 * 1024;

export interface S3Tuning {
  /** Bytes of each part of a multipart upload (at least 5 MiB). */
  partSize?: number;
  /** Parts uploaded at once (memory: partSize × queueSize per write). */
  queueSize?: number;
  /** Objects larger than this are copied part by part (UploadPartCopy); S3 copies at most 5 GiB at once. */
  multipartCopyAbove?: number;
}

const DEFAULTS: Required<S3Tuning> = { partSize: 8 * MiB, queueSize: 4, multipartCopyAbove: 5 * 1024 * MiB };
/** Parts of a multipart copy copied at once. */
const COPY_CONCURRENCY = 4;
/** ffmpeg may keep reading a signed URL (seeks are new range requests) for a whole job: an hour at least. */
const MEDIA_INPUT_TTL_SECONDS = 3600;

/** ETag, Last-Modified in whole seconds (HEAD answers seconds, listings milliseconds) and size. */
const versionOf = (etag: string | undefined, modifiedAt: Date, size: number): string =>
  `${etag ?? ''}:${Math.floor(modifiedAt.getTime() / 1000)}:${size}`;

export class S3Store implements ObjectStore {
  readonly driver = 's3' as const;
  readonly location: string;
  readonly bucket: string;
  /** The key prefix inside the bucket: '' or segments ending with '/'. */
  readonly prefix: string;
  private readonly settings: S3Settings;
  private readonly tuning: Required<S3Tuning>;
  private readonly workDir: string;
  private connected: Promise<{ sdk: Sdk; client: ClientS3.S3Client }> | null = null;

  /** `workDir` is the local working folder (SVC_STORAGE_DIR): staged copies go to its tmp/. */
  constructor(settings: S3Settings, workDir: string, tuning: S3Tuning = {}) {
    if (!settings.bucket) throw new Error('the s3 storage driver needs SVC_S3_BUCKET');
    if (!settings.accessKeyId || !settings.secretAccessKey) throw new Error('the s3 storage driver needs SVC_S3_ACCESS_KEY_ID and SVC_S3_SECRET_ACCESS_KEY');
    this.settings = settings;
    this.tuning = { ...DEFAULTS, ...tuning };
    this.bucket = settings.bucket;
    this.prefix = settings.prefix ? settings.prefix.replace(/\/*$/, '/') : '';
    this.workDir = path.resolve(workDir);
    this.location = `s3://${this.bucket}/${this.prefix}${settings.endpoint ? ` at ${settings.endpoint}` : ''}`;
  }

  private conn(): Promise<{ sdk: Sdk; client: ClientS3.S3Client }> {
    this.connected ??= createClient(this.settings).catch((err: unknown) => {
      this.connected = null;
      throw err;
    });
    return this.connected;
  }

  /** Closes the client's sockets (tests and short-lived commands). */
  async close(): Promise<void> {
    const c = this.connected;
    this.connected = null;
    if (c) (await c.catch(() => null))?.client.destroy();
  }

  /** The bucket key of a store key (422 unsafe_path for an unsafe key). */
  private full(key: string): string {
    const problem = storedPathProblem(key, true);
    if (problem) throw unsafePath(problem);
    return this.prefix + key;
  }

  private fail(op: string, key: string, err: unknown): Error {
    const s = this.settings;
    return storageError(op, key, err, [s.secretAccessKey, s.sessionToken, s.accessKeyId]);
  }

  private async send<T = unknown>(op: string, key: string, make: (sdk: Sdk) => object): Promise<T> {
    const { sdk, client } = await this.conn();
    try {
      return (await client.send(make(sdk) as never)) as T;
    } catch (err) {
      throw this.fail(op, key, err);
    }
  }

  async write(source: Readable | AsyncIterable<Buffer>, check: WriteCheck = () => {}): Promise<PendingWrite> {
    const tmpKey = tempKey('upload');
    const Key = this.full(tmpKey);
    const { sdk, client } = await this.conn();
    const m = measuring(check);
    const body = new PassThrough({ highWaterMark: this.tuning.partSize });
    const upload = new sdk.storage.Upload({
      client, params: { Bucket: this.bucket, Key, Body: body, ContentType: 'application/octet-stream' },
      partSize: this.tuning.partSize, queueSize: this.tuning.queueSize, leavePartsOnError: false,
    });
    // A failing source or check destroys `body`: the upload then fails, aborting its multipart upload.
    const fed = pipeline(source, m.stage, body);
    const [feeding, uploading] = await Promise.allSettled([fed, upload.done()]);
    if (feeding.status === 'rejected' || uploading.status === 'rejected') {
      if (upload.uploadId) await client.send(new sdk.s3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId: upload.uploadId })).catch(() => {});
      await client.send(new sdk.s3.DeleteObjectCommand({ Bucket: this.bucket, Key })).catch(() => {});
      if (feeding.status === 'rejected') throw feeding.reason;
      throw this.fail('upload', tmpKey, (uploading as PromiseRejectedResult).reason);
    }
    return this.pending(tmpKey, m.measured());
  }

  private pending(tmpKey: string, got: Written): PendingWrite {
    let done = false;
    return {
      ...got,
      tmpKey,
      place: async (key, opts) => {
        if (done) throw new Error('this write was already placed or discarded');
        this.full(key);
        // Content-addressed keys: an object already there has the same bytes, keep it.
        if (!opts?.replace && (await this.stat(key))) {
          done = true;
          await this.delete(tmpKey);
          return false;
        }
        await this.copyFull(tmpKey, key, got.size);
        done = true;
        await this.delete(tmpKey);
        return true;
      },
      discard: async () => {
        if (done) return;
        done = true;
        await this.delete(tmpKey);
      },
    };
  }

  async putFile(key: string, file: string): Promise<Written> {
    this.full(key);
    const pending = await this.write(fs.createReadStream(file, { highWaterMark: MiB }));
    try {
      await pending.place(key, { replace: true });
    } finally {
      await pending.discard();
    }
    return { size: pending.size, sha256: pending.sha256, head: pending.head };
  }

  async putBytes(key: string, bytes: Buffer): Promise<Written> {
    const Key = this.full(key);
    // One PUT is atomic: the object appears complete or not at all.
    await this.send('put', key, (sdk) => new sdk.s3.PutObjectCommand({ Bucket: this.bucket, Key, Body: bytes, ContentLength: bytes.length, ContentType: 'application/octet-stream' }));
    return { size: bytes.length, sha256: sha256Hex(bytes), head: Buffer.from(bytes.subarray(0, SNIFF_BYTES)) };
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const Key = this.full(key);
    const { sdk, client } = await this.conn();
    try {
      const got = await client.send(new sdk.s3.GetObjectCommand({ Bucket: this.bucket, Key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
      return got.Body as Readable;
    } catch (err) {
      // A range past the end reads nothing, as a file read would.
      if (range && ((err as { name?: string }).name === 'InvalidRange' || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416)) {
        if (await this.stat(key)) return Readable.from([]);
      }
      throw this.fail('read', key, err);
    }
  }

  async readBytes(key: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of await this.read(key)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  async stat(key: string): Promise<StoredObject | null> {
    const Key = this.full(key);
    const { sdk, client } = await this.conn();
    try {
      const h = await client.send(new sdk.s3.HeadObjectCommand({ Bucket: this.bucket, Key }));
      const modifiedAt = h.LastModified ?? new Date(0);
      return { key, size: h.ContentLength ?? 0, modifiedAt, version: versionOf(h.ETag, modifiedAt, h.ContentLength ?? 0) };
    } catch (err) {
      if (isMissing(err)) return null;
      throw this.fail('stat', key, err);
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.full(key);
    // S3 answers 204 for a missing key too.
    await this.send('delete', key, (sdk) => new sdk.s3.DeleteObjectCommand({ Bucket: this.bucket, Key }));
  }

  async deletePrefix(prefix: string): Promise<void> {
    if (prefix === '' || prefix === '/') throw new Error('deletePrefix: refusing to remove every object');
    // Listed first, then removed: deleting while paging through the listing could skip keys.
    const keys: string[] = [];
    for await (const o of this.list(prefix)) keys.push(o.key);
    for (const key of keys) await this.delete(key);
  }

  async move(from: string, to: string): Promise<void> {
    await this.copy(from, to);
    await this.delete(from);
  }

  async copy(from: string, to: string): Promise<void> {
    this.full(to);
    const st = await this.stat(from);
    if (!st) throw missingObject();
    await this.copyFull(from, to, st.size);
  }

  /** Server-side copy of `from` (of `size` bytes) to `to`: one CopyObject, or part by part above the limit. */
  private async copyFull(from: string, to: string, size: number): Promise<void> {
    const source = `${this.bucket}/${this.full(from).split('/').map(encodeURIComponent).join('/')}`;
    const Key = this.full(to);
    if (size <= this.tuning.multipartCopyAbove) {
      await this.send('copy', from, (sdk) => new sdk.s3.CopyObjectCommand({ Bucket: this.bucket, Key, CopySource: source, MetadataDirective: 'REPLACE', ContentType: 'application/octet-stream' }));
      return;
    }
    const { sdk, client } = await this.conn();
    // At most 10,000 parts; parts of at least 5 MiB (the last one excepted).
    const partSize = Math.max(this.tuning.partSize, 5 * MiB, Math.ceil(size / 10_000));
    const created = await this.send<ClientS3.CreateMultipartUploadCommandOutput>('copy', from, (s) => new s.s3.CreateMultipartUploadCommand({ Bucket: this.bucket, Key, ContentType: 'application/octet-stream' }));
    const UploadId = created.UploadId!;
    const count = Math.ceil(size / partSize);
    const parts: { PartNumber: number; ETag: string }[] = [];
    let next = 0;
    try {
      await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, count) }, async () => {
        while (next < count) {
          const i = next++;
          const start = i * partSize;
          const end = Math.min(size, start + partSize) - 1;
          const got = await client.send(new sdk.s3.UploadPartCopyCommand({ Bucket: this.bucket, Key, UploadId, PartNumber: i + 1, CopySource: source, CopySourceRange: `bytes=${start}-${end}` }));
          parts.push({ PartNumber: i + 1, ETag: got.CopyPartResult!.ETag! });
        }
      }));
      parts.sort((a, b) => a.PartNumber - b.PartNumber);
      await client.send(new sdk.s3.CompleteMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    } catch (err) {
      await client.send(new sdk.s3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId })).catch(() => {});
      throw this.fail('copy', from, err);
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const bare = prefix.replace(/\/$/, '');
    if (bare) this.full(bare);
    const { sdk, client } = await this.conn();
    let ContinuationToken: string | undefined;
    do {
      let page: ClientS3.ListObjectsV2CommandOutput;
      try {
        page = await client.send(new sdk.s3.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken }));
      } catch (err) {
        throw this.fail('list', prefix, err);
      }
      for (const o of page.Contents ?? []) {
        const key = o.Key!.slice(this.prefix.length);
        if (key.endsWith('/') || storedPathProblem(key, true)) continue; // folder markers, names this store never writes
        const modifiedAt = o.LastModified ?? new Date(0);
        yield { key, size: o.Size ?? 0, modifiedAt, version: versionOf(o.ETag, modifiedAt, o.Size ?? 0) };
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async signedUrl(key: string, opts: SignedUrlOptions = {}): Promise<string> {
    const Key = this.full(key);
    const { sdk, client } = await this.conn();
    const command = new sdk.s3.GetObjectCommand({
      Bucket: this.bucket, Key,
      ...(opts.contentDisposition ? { ResponseContentDisposition: opts.contentDisposition } : {}),
      ...(opts.contentType ? { ResponseContentType: opts.contentType } : {}),
    });
    return sdk.presigner.getSignedUrl(client, command, { expiresIn: opts.expiresIn ?? this.settings.urlTtlSeconds });
  }

  async mediaInput(key: string): Promise<string> {
    if (!(await this.stat(key))) throw missingObject();
    return this.signedUrl(key, { expiresIn: Math.max(this.settings.urlTtlSeconds, MEDIA_INPUT_TTL_SECONDS) });
  }

  async localCopy(key: string): Promise<LocalCopy> {
    const file = path.join(this.workDir, tempKey('stage'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    try {
      await pipeline(await this.read(key), fs.createWriteStream(file, { flags: 'wx', highWaterMark: MiB }));
    } catch (err) {
      fs.rmSync(file, { force: true });
      throw err;
    }
    return { path: file, release: async () => fs.rmSync(file, { force: true }) };
  }

  async *incompleteUploads(prefix: string): AsyncIterable<IncompleteUpload> {
    const bare = prefix.replace(/\/$/, '');
    if (bare) this.full(bare);
    const { sdk, client } = await this.conn();
    let KeyMarker: string | undefined;
    let UploadIdMarker: string | undefined;
    do {
      let page: ClientS3.ListMultipartUploadsCommandOutput;
      try {
        page = await client.send(new sdk.s3.ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.prefix + prefix, KeyMarker, UploadIdMarker }));
      } catch (err) {
        throw this.fail('list uploads', prefix, err);
      }
      for (const u of page.Uploads ?? []) {
        if (!u.Key || !u.UploadId) continue;
        yield { key: u.Key.slice(this.prefix.length), uploadId: u.UploadId, initiatedAt: u.Initiated ?? new Date(0) };
      }
      const more = page.IsTruncated && (page.NextKeyMarker || page.NextUploadIdMarker);
      KeyMarker = more ? page.NextKeyMarker : undefined;
      UploadIdMarker = more ? page.NextUploadIdMarker : undefined;
    } while (KeyMarker || UploadIdMarker);
  }

  async abortUpload(upload: IncompleteUpload): Promise<void> {
    const Key = this.full(upload.key);
    await this.send('abort upload', upload.key, (sdk) => new sdk.s3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId: upload.uploadId })).catch((err: unknown) => {
      if ((err as { status?: number }).status === 404) return; // already gone
      throw err;
    });
  }
}
