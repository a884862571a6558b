// Output files of generation jobs: a model's bytes (a response stream, a web stream, or a decoded
// base64 Buffer) are streamed by the object store to a temporary key while hashed (SHA-256) and
// counted, then placed at outputs/<jobId>/<name>. Placing replaces an object of the same name left by
// an earlier attempt, so a job never holds two copies of an output. Over `maxBytes` the transfer is
// stopped and the temporary object removed (output_too_large, not retryable).
import path from 'node:path';
import { addAbortSignal, Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ConnectorError } from './types.ts';
import type { CallRequest, OutputFile } from './types.ts';
import { joinUrl, originOf } from './urls.ts';
import { connectorEgress, ensureOk, send } from './transport.ts';
import { EgressRefused } from '../../../kernel/egress.ts';
import type { ObjectStore, PendingWrite } from '../../../kernel/storage/store.ts';
import { detectComposite, type CompositeKind } from '../../../media-tools/collage.ts';

export type OutputRole = OutputFile['role'];

export interface SaveOutputOptions {
  /** Where outputs are stored. */
  storage: ObjectStore;
  jobId: string;
  /** File name inside outputs/<jobId>/, e.g. 'image-1.png' (letters, digits, '.', '_', '-'). */
  name: string;
  role: OutputRole;
  mimeType: string;
  source: WebReadableStream | ReadableStream | Readable | Buffer;
  maxBytes: number;
  signal?: AbortSignal;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const SAFE_JOB = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The key outputs/<jobId>/<name>, refusing a job id or name that would leave outputs/<jobId>/. */
export function outputKeyOf(jobId: string, name: string): string {
  if (!SAFE_JOB.test(jobId)) throw new ConnectorError('output_unsafe_name', 'the job id is not a safe directory name', false);
  if (!SAFE_NAME.test(name) || name.includes('..')) throw new ConnectorError('output_unsafe_name', 'the output file name is not safe', false);
  return `outputs/${jobId}/${name}`;
}

const tooLarge = (max: number) => new ConnectorError('output_too_large', `the output exceeds the largest accepted size (${max} bytes)`, false);

function writeError(err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const e = err as { code?: string; name?: string; message?: string };
  if (e?.name === 'AbortError') return new ConnectorError('connector_aborted', 'the call was aborted', true);
  if (e?.code === 'ECONNRESET' || e?.code === 'EPIPE' || e?.code === 'ERR_STREAM_PREMATURE_CLOSE' || e?.code === 'UND_ERR_SOCKET') {
    return new ConnectorError('connector_unreachable', 'the connection closed during the download', true);
  }
  return new ConnectorError('output_write_failed', `could not store the output: ${String(e?.message ?? err).slice(0, 200)}`, true);
}

/** Streams `source` to outputs/<jobId>/<name> through a temporary key; returns the stored file record. */
export async function saveOutput(opts: SaveOutputOptions): Promise<OutputFile> {
  const key = outputKeyOf(opts.jobId, opts.name);
  if (opts.signal?.aborted) throw new ConnectorError('connector_aborted', 'the call was aborted', true);
  const src = opts.source;
  if (Buffer.isBuffer(src) && src.length > opts.maxBytes) throw tooLarge(opts.maxBytes);
  const readable = Buffer.isBuffer(src) ? Readable.from([src]) : src instanceof Readable ? src : Readable.fromWeb(src as WebReadableStream);
  // An abort destroys the source with an AbortError: the write fails and its temporary object goes.
  if (opts.signal) addAbortSignal(opts.signal, readable);
  let pending: PendingWrite;
  try {
    pending = await opts.storage.write(readable, (total) => {
      if (total > opts.maxBytes) throw tooLarge(opts.maxBytes);
    });
  } catch (err) {
    readable.destroy();
    throw writeError(err);
  }
  try {
    await pending.place(key, { replace: true });
  } catch (err) {
    await pending.discard().catch(() => {});
    throw writeError(err);
  }
  return { path: key, role: opts.role, mimeType: opts.mimeType, fileSize: pending.size, sha256: pending.sha256 };
}

// ---------------------------------------------------------------------------------------------
// MIME types and extensions

const EXT_BY_MIME: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/aac': 'aac',
  'audio/mp4': 'm4a',
  'text/plain': 'txt',
  'application/json': 'json',
};
const MIME_BY_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mov: 'video/quicktime',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  aac: 'audio/aac',
  m4a: 'audio/mp4',
  txt: 'text/plain',
  json: 'application/json',
};
const DEFAULT_MIME: Record<OutputRole, string> = { image: 'image/png', video: 'video/mp4', audio: 'audio/wav', text: 'text/plain' };
const ROLE_PREFIX: Record<OutputRole, string> = { image: 'image/', video: 'video/', audio: 'audio/', text: 'text/' };

const bare = (mime: string | null | undefined): string => (mime ?? '').split(';')[0].trim().toLowerCase();

/**
 * The MIME type of an output: the first of the declared type (http-json outputs), the response
 * Content-Type and the file name's extension that is specific (not octet-stream) and fits the role;
 * otherwise the role's default (image/png, video/mp4, audio/wav, text/plain).
 */
export function mimeFor(role: OutputRole, candidates: Array<string | null | undefined>, fileName?: string | null): string {
  for (const c of candidates) {
    const m = bare(c);
    if (m && m !== 'application/octet-stream' && m.includes('/') && (m.startsWith(ROLE_PREFIX[role]) || EXT_BY_MIME[m])) return m;
  }
  if (fileName) {
    const ext = path.extname(fileName).slice(1).toLowerCase();
    const m = MIME_BY_EXT[ext];
    if (m && m.startsWith(ROLE_PREFIX[role])) return m;
  }
  return DEFAULT_MIME[role];
}

/** The file extension of a MIME type (the role's default extension when unknown). */
export function extFor(mime: string, role: OutputRole): string {
  return EXT_BY_MIME[bare(mime)] ?? EXT_BY_MIME[DEFAULT_MIME[role]];
}

/** 'image-1.png' style names. */
export function outputName(role: OutputRole, index: number, mime: string): string {
  return `${role}-${index}.${extFor(mime, role)}`;
}

// ---------------------------------------------------------------------------------------------
// Downloads and the single-image check

export interface DownloadOptions {
  url: string;
  /** The call: its connector (whose origin the file must come from) and the operator's extra output origins. */
  req: Pick<CallRequest, 'connector' | 'outputOrigins'>;
  /** The connector's credential: sent as a Bearer credential to the connector's own origin only. */
  secret: string | null;
  timeoutMs: number;
  signal?: AbortSignal;
  storage: ObjectStore;
  jobId: string;
  role: OutputRole;
  index: number;
  /** A type the model declared for the file, preferred over the response's Content-Type. */
  declaredMime?: string | null;
  /** The file name the model gave (its extension is a MIME hint). */
  fileName?: string | null;
  maxBytes: number;
}

/**
 * Where a model's file may be fetched from: the connector endpoint's own origin, or an origin the
 * operator listed in SVC_CONNECTOR_OUTPUT_ORIGINS; never another host (an answer naming an internal
 * URL must not turn the service into a reader of the inner network). 'own' or 'listed'; throws
 * egress_refused (not retryable) otherwise.
 */
export function outputOrigin(url: string, req: Pick<CallRequest, 'connector' | 'outputOrigins'>): 'own' | 'listed' {
  const origin = originOf(url);
  if (origin !== null && origin !== 'null' && origin === originOf(req.connector.endpoint)) return 'own';
  if (origin !== null && origin !== 'null' && (req.outputOrigins ?? []).includes(origin)) return 'listed';
  throw new ConnectorError('egress_refused', new EgressRefused(
    `the model answered a file URL on ${origin && origin !== 'null' ? origin : 'another scheme'}, which is neither the connector's own origin nor in SVC_CONNECTOR_OUTPUT_ORIGINS`,
  ).message, false);
}

/** GET `url` (the connector's own origin or a listed one) and stream the body into outputs/<jobId>/<role>-<index>.<ext>. */
export async function downloadOutput(o: DownloadOptions): Promise<OutputFile> {
  const secret = outputOrigin(o.url, o.req) === 'own' ? o.secret : null;
  const resp = await send({
    method: 'GET',
    url: o.url,
    headers: secret ? { authorization: `Bearer ${secret}` } : {},
    timeoutMs: o.timeoutMs,
    signal: o.signal,
    secret,
    egress: connectorEgress(o.req.connector),
  });
  await ensureOk(resp, 'GET', secret);
  const declaredLength = Number(resp.headers['content-length']);
  if (Number.isFinite(declaredLength) && declaredLength > o.maxBytes) {
    resp.body.destroy();
    throw tooLarge(o.maxBytes);
  }
  const mime = mimeFor(o.role, [o.declaredMime, resp.headers['content-type']], o.fileName);
  return saveOutput({
    storage: o.storage,
    jobId: o.jobId,
    name: outputName(o.role, o.index, mime),
    role: o.role,
    mimeType: mime,
    source: resp.body,
    maxBytes: o.maxBytes,
    signal: o.signal,
  });
}

/**
 * A saved image must be one single picture: a collage, split screen or contact sheet is deleted
 * and the call fails with image_composite_detected (not retryable).
 */
export async function rejectComposite(storage: ObjectStore, file: OutputFile, signal?: AbortSignal): Promise<void> {
  let composite: CompositeKind | null;
  try {
    composite = (await detectComposite(await storage.mediaInput(file.path), { signal })).composite;
  } catch (err) {
    await storage.delete(file.path);
    if (err instanceof ConnectorError) throw err;
    if ((err as Error)?.name === 'AbortError') throw new ConnectorError('connector_aborted', 'the call was aborted', true);
    throw new ConnectorError('image_check_failed', `could not check the image: ${String((err as Error)?.message ?? err).slice(0, 200)}`, false);
  }
  if (composite !== null) {
    await storage.delete(file.path);
    throw new ConnectorError('image_composite_detected', `the image is a ${composite}; exactly one single image is required`, false);
  }
}

/** Exactly one image is required of an image job; checked before anything is downloaded. */
export function checkImageCount(count: number): void {
  if (count !== 1) {
    throw new ConnectorError('image_count_mismatch', `the model answered ${count} images; exactly one is required`, false);
  }
}

/**
 * Stores one file a model answered: fetched from `url` (relative to the endpoint's origin; only from
 * that origin or a listed one, the credential to the connector's own origin only) or decoded from `base64`, whose MIME type is
 * `declaredMime` or else what `sniff` reads from the bytes.
 */
export async function storeAnswered(
  req: CallRequest, secret: string | null,
  f: { role: OutputRole; index: number; url: string | null; base64: string | null; declaredMime: string | null; sniff?: (b: Buffer) => string | null },
): Promise<OutputFile> {
  const common = { storage: req.storage, jobId: req.execution.jobId, role: f.role, maxBytes: req.maxOutputBytes };
  if (f.url !== null) {
    const url = joinUrl(req.connector.endpoint, f.url, false);
    return downloadOutput({
      ...common, url, req, secret, timeoutMs: req.timeoutMs,
      signal: req.signal, index: f.index, declaredMime: f.declaredMime,
    });
  }
  const bytes = Buffer.from(f.base64 ?? '', 'base64');
  const mime = mimeFor(f.role, [f.declaredMime, f.sniff?.(bytes)]);
  return saveOutput({ ...common, name: outputName(f.role, f.index, mime), mimeType: mime, source: bytes, signal: req.signal });
}
