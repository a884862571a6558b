// The S3 driver's client: the AWS SDK v3 packages loaded on first use (optional dependencies: the
// local driver and the default install never need them), one S3Client built from the SVC_S3_*
// settings with the credentials passed explicitly (the SDK's default chain, ~/.aws files and instance
// metadata, is never consulted), and the translation of SDK failures into errors that carry no
// credential and no request signature.
//
// Calls to SVC_S3_ENDPOINT are the operator's own storage, configured by the operator; they are not
// tenant egress and do not go through the egress policy (src/kernel/egress.ts), which governs the
// URLs tenants name (connectors, webhooks).
import { AppError } from '../errors.ts';
import type * as ClientS3 from '@aws-sdk/client-s3';
import type * as LibStorage from '@aws-sdk/lib-storage';
import type * as Presigner from '@aws-sdk/s3-request-presigner';

export interface Sdk {
  s3: typeof ClientS3;
  storage: typeof LibStorage;
  presigner: typeof Presigner;
}

export const SDK_PACKAGES = ['@aws-sdk/client-s3', '@aws-sdk/lib-storage', '@aws-sdk/s3-request-presigner'] as const;

let sdk: Promise<Sdk> | null = null;

/** The SDK modules, imported once; a clear error naming the install command when they are missing. */
export function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage'), import('@aws-sdk/s3-request-presigner')])
    .then(([s3, storage, presigner]) => ({ s3, storage, presigner }))
    .catch((err: unknown) => {
      sdk = null;
      const code = (err as NodeJS.ErrnoException)?.code;
      if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
        throw new Error(`SVC_STORAGE_DRIVER=s3 needs the optional packages ${SDK_PACKAGES.join(', ')}: run npm install ${SDK_PACKAGES.join(' ')}`);
      }
      throw err;
    });
  return sdk;
}

/** What the S3 driver is configured with (from SVC_S3_* and SVC_STORAGE_URL_TTL_SECONDS). */
export interface S3Settings {
  endpoint: string;
  bucket: string;
  region: string;
  forcePathStyle: boolean;
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  urlTtlSeconds: number;
}

/** Retries of a failed call (the SDK's standard mode: throttling, 5xx and network errors, with backoff). */
const MAX_ATTEMPTS = 3;
/** Connecting may take this long; a socket idle this long (no byte either way) fails the call. */
const CONNECT_TIMEOUT_MS = 5_000;
const IDLE_TIMEOUT_MS = 60_000;

export async function createClient(s: S3Settings): Promise<{ sdk: Sdk; client: ClientS3.S3Client }> {
  const loaded = await loadSdk();
  const client = new loaded.s3.S3Client({
    region: s.region,
    ...(s.endpoint ? { endpoint: s.endpoint } : {}),
    forcePathStyle: s.forcePathStyle,
    // Static credentials: no provider chain runs (no ~/.aws/credentials, no instance metadata).
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, ...(s.sessionToken ? { sessionToken: s.sessionToken } : {}) },
    maxAttempts: MAX_ATTEMPTS,
    retryMode: 'standard',
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: IDLE_TIMEOUT_MS },
    // Every option the SDK would otherwise look up in the environment or ~/.aws/config is given here.
    useFipsEndpoint: false,
    useDualstackEndpoint: false,
    useArnRegion: false,
    disableS3ExpressSessionAuth: true,
    followRegionRedirects: false,
    // No "Expect: 100-continue": gateways that never answer it (Ceph RGW's beast) cost a second a part.
    expectContinueHeader: false,
    // The service hashes every object itself (SHA-256); S3-compatible services differ on the newer
    // CRC checksums, so they are sent and checked only where an operation requires them.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return { sdk: loaded, client };
}

interface SdkError { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } }

export const statusOf = (err: unknown): number | undefined => (err as SdkError)?.$metadata?.httpStatusCode;

/** True for an SDK answer that the object (or upload) does not exist. */
export function isMissing(err: unknown): boolean {
  const name = (err as SdkError)?.name ?? (err as SdkError)?.Code;
  return name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload' || statusOf(err) === 404;
}

export const missingObject = (): AppError => new AppError(404, 'not_found', 'the file is registered but not in storage');

/** A failed S3 call, described by operation, key and the service's error name only. */
export class StorageError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status: number | undefined) {
    super(message);
    this.name = 'StorageError';
    this.status = status;
  }
}

/**
 * The error to surface for a failed call: 404 not_found when missing, otherwise a StorageError naming
 * the operation, the key, the error's name and status. The SDK's error is not kept (not even as
 * `cause`): its fields can echo the access key id, the string to sign or a signed URL.
 */
export function storageError(op: string, key: string, err: unknown, secrets: readonly string[]): Error {
  if (err instanceof AppError) return err;
  if (isMissing(err)) return missingObject();
  const name = (err as SdkError)?.name ?? 'Error';
  const status = statusOf(err);
  const code = (err as NodeJS.ErrnoException)?.code;
  let message = `S3 ${op} of ${JSON.stringify(key)} failed: ${/^[A-Za-z0-9_.-]{1,64}$/.test(name) ? name : 'Error'}${status ? ` (HTTP ${status})` : ''}${code && /^[A-Z_]{1,40}$/.test(code) ? ` ${code}` : ''}`;
  for (const s of secrets) if (s) message = message.split(s).join('[redacted]');
  return new StorageError(message, status);
}
