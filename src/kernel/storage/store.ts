// The one interface every place that touches media goes through. Keys are the relative paths the
// database already records (assets/<org>/<xx>/<sha256>, outputs/<job>/<name>, frames/..., exports/...),
// so a store can move from one driver to the other without a schema change. Two drivers implement it:
// `local` (a folder on disk, the default) and `s3` (any S3-compatible service, only when
// SVC_STORAGE_DRIVER=s3). Every write goes to a temporary key first and is moved into place only once
// complete, hashing SHA-256 as the bytes stream: the service's own hash is the integrity source on both.
import { randomBytes } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import type { Readable } from 'node:stream';

export type StorageDriver = 'local' | 's3';

/** What a store knows of one object. */
export interface StoredObject {
  key: string;
  size: number;
  modifiedAt: Date;
  /**
   * Changes whenever the bytes may have changed (local: device, inode, size, mtime and ctime in
   * nanoseconds; s3: ETag and Last-Modified): a verification is remembered against it.
   */
  version: string;
}

/** An inclusive byte range, as in HTTP. */
export interface ByteRange { start: number; end: number }

/** What streaming a write measured. */
export interface Written {
  size: number;
  sha256: string;
  /** The first SNIFF_BYTES bytes (for sniffMime). */
  head: Buffer;
}

/** A complete write under a temporary key (tmp/...), visible under no final key until placed. */
export interface PendingWrite extends Written {
  readonly tmpKey: string;
  /**
   * Moves the bytes to `key`. Without `replace`, an object already at `key` is kept and this write is
   * dropped (content-addressed keys: same key, same bytes); answers whether this write was placed.
   */
  place(key: string, opts?: { replace?: boolean }): Promise<boolean>;
  /** Removes the temporary object (idempotent; after place() it does nothing). */
  discard(): Promise<void>;
}

/** Called with the running byte count before each chunk is stored; throws to abort the write (413, 409...). */
export type WriteCheck = (total: number) => void;

export interface SignedUrlOptions {
  /** Lifetime in seconds (default: the store's SVC_STORAGE_URL_TTL_SECONDS). */
  expiresIn?: number;
  /** Content-Disposition the URL answers with. */
  contentDisposition?: string;
  contentType?: string;
}

/** A local file holding an object's bytes, for tools that need a path (ffmpeg); release() when done. */
export interface LocalCopy { path: string; release(): Promise<void> }

/** An S3 multipart upload (or, locally, nothing) begun under `key` and never completed. */
export interface IncompleteUpload { key: string; uploadId: string; initiatedAt: Date }

export interface ObjectStore {
  readonly driver: StorageDriver;
  /** Where the objects are, for readiness and logs (never a credential): a folder, or s3://bucket/prefix at an endpoint. */
  readonly location: string;

  /**
   * Streams `source` to a new temporary key with backpressure, hashing and counting as it goes;
   * `check` may abort. On any failure the temporary object is removed and the error rethrown.
   */
  write(source: Readable | AsyncIterable<Buffer>, check?: WriteCheck): Promise<PendingWrite>;
  /** write() of a local file, placed at `key` (replacing what is there). */
  putFile(key: string, file: string): Promise<Written>;
  /** write() of bytes in memory, placed at `key` (replacing what is there). */
  putBytes(key: string, bytes: Buffer): Promise<Written>;

  /** The object's bytes (or one range): 404 not_found when missing, 422 unsafe_path for an unsafe key. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  readBytes(key: string): Promise<Buffer>;
  /** null when missing; 422 unsafe_path for an unsafe key. */
  stat(key: string): Promise<StoredObject | null>;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Removes every object whose key starts with `prefix` (a folder: end it with '/'; the local driver
   * then removes the folder too, so no empty folder is left behind). An empty prefix is refused.
   */
  deletePrefix(prefix: string): Promise<void>;
  /** Server-side copy (replacing what is at `to`). */
  copy(from: string, to: string): Promise<void>;
  /** Moves an object to another key (replacing what is there): a rename locally, a server-side copy then delete on s3. */
  move(from: string, to: string): Promise<void>;
  /** Every object whose key starts with `prefix` (a folder: end it with '/'), in key order, symbolic links never followed. */
  list(prefix: string): AsyncIterable<StoredObject>;

  /** A short-lived URL that GETs the object without credentials, or null when the driver serves no URLs (local). */
  signedUrl(key: string, opts?: SignedUrlOptions): Promise<string | null>;
  /** What ffmpeg/ffprobe should open to read the object: a path (local) or a signed URL (s3). */
  mediaInput(key: string): Promise<string>;
  /** A local file with the object's bytes: the stored file itself (local) or a copy staged under cache/ (s3). */
  localCopy(key: string): Promise<LocalCopy>;

  /** Multipart uploads begun under `prefix` and never completed (none locally). */
  incompleteUploads(prefix: string): AsyncIterable<IncompleteUpload>;
  abortUpload(upload: IncompleteUpload): Promise<void>;
}

/** This process as a writer of temporary objects: host (letters, digits, '-') and pid. */
export interface Writer { host: string; pid: number }

export const THIS_WRITER: Writer = Object.freeze({ host: hostTag(osHostname()), pid: process.pid });

function hostTag(name: string): string {
  return name.replace(/[^A-Za-z0-9-]/g, '-').slice(0, 63) || 'host';
}

/**
 * A new temporary key (tmp/<kind>.<host>.<pid>.<random><ext>): the writer that owns it is in its name,
 * so a cleanup can tell a live writer's file from one whose process is gone.
 */
export function tempKey(kind: string, ext = ''): string {
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(kind)) throw new Error(`unfit temporary kind ${JSON.stringify(kind)}`);
  return `tmp/${kind}.${THIS_WRITER.host}.${THIS_WRITER.pid}.${randomBytes(12).toString('hex')}${ext}`;
}

/** The writer named in a temporary key's first segment after tmp/, or null for a name tempKey() did not make. */
export function writerOf(key: string): Writer | null {
  const m = /^tmp\/[a-z][a-z0-9-]{0,31}\.([A-Za-z0-9-]{1,63})\.(\d{1,10})\.[0-9a-f]{24}/.exec(key);
  return m ? { host: m[1], pid: Number(m[2]) } : null;
}
