// The shapes shared by the model platform (connector records), the protocols that call model
// services, and the worker that runs jobs through them. Protocol code is pure I/O: it never touches
// the database; everything it needs arrives in a CallRequest.
import type { CredentialPolicy } from '../../../kernel/credentials.ts';
import type { ObjectStore } from '../../../kernel/storage/store.ts';

export const CONNECTOR_KINDS = ['http-json', 'openai-compatible', 'comfyui'] as const;
export type ConnectorKind = (typeof CONNECTOR_KINDS)[number];

export const COST_MODES = ['local', 'mixed', 'cloud'] as const;
export type CostMode = (typeof COST_MODES)[number];

export const CONNECTOR_STATUSES = ['pending', 'ready', 'unreachable', 'disabled', 'awaiting_approval'] as const;
export type ConnectorStatus = (typeof CONNECTOR_STATUSES)[number];

/** Kinds of work a connector may be asked for (`compose` is local: the worker runs it without a connector, src/generation/jobs/compose-job.ts). */
export const WORK_KINDS = ['image', 'video', 'tts', 'asr', 'chat', 'prompt'] as const;
export type WorkKind = (typeof WORK_KINDS)[number];

export interface ConnectorProtocol {
  /** Route called by a probe (GET); default per kind: http-json '/health', openai-compatible '/v1/models', comfyui '/system_stats'. */
  healthRoute?: string;
  /** Route per kind of work (openai-compatible, http-json optional override of the endpoint path). */
  routes?: Partial<Record<string, string>>;
  /** Model name per kind of work. */
  models?: Partial<Record<string, string>>;
  /** comfyui: the API-format workflow with placeholders ("{{prompt}}", "{{seed}}", ...). */
  workflow?: Record<string, unknown>;
}

/** A connector as the protocols see it (parsed from the model_connectors row). */
export interface ConnectorSpec {
  id: string;
  label: string;
  endpoint: string;
  kind: ConnectorKind;
  capability: string[];
  costMode: CostMode;
  authEnv: string | null;
  protocol: ConnectorProtocol;
}

/** What the contract says of every input file. */
interface InputFile { fileName: string; mimeType: string; fileSize: number; contentSha256: string }
/** An input asset version, fixed when the job was created. */
export interface AssetVersionInput extends InputFile { assetId: string; versionId: string }
/** A media artifact of the job's dependency (JobInput.useDependencyOutputs), read at call time. */
export interface ArtifactInput extends InputFile { artifactId: string; jobId: string }
export type ContractInput = AssetVersionInput | ArtifactInput;

/** The production contract sent with every call (documented in docs/generation.md and the OpenAPI document). */
export interface ProductionContract {
  organization: { id: string; name: string };
  project: { id: string; name: string };
  episode: { id: string; title: string; number: number } | null;
  shot: { id: string; code: string; title: string; description: string } | null;
  prompt: string;
  negativePrompt: string | null;
  /** Story bible entries the shot refers to. */
  bible: Array<{ id: string; kind: string; name: string; revision: number | null }>;
  /** Input asset versions (reference images, audio to transcribe, ...), then the dependency's media artifacts when the job uses them. */
  inputs: ContractInput[];
  /** Free-form generation parameters from the job input (size, duration, voice, seed, ...). */
  parameters: Record<string, unknown>;
}

export interface Execution {
  jobId: string;
  attempt: number;
  kind: string;
  model: string | null;
  /** ISO time after which the call is abandoned. */
  deadline: string;
}

export interface CallRequest {
  connector: ConnectorSpec;
  contract: ProductionContract;
  execution: Execution;
  /**
   * Local files holding the input objects' bytes, in contract.inputs order (asr uploads the first
   * one): staged by the runner with the store's localCopy() and released after the call.
   */
  inputFiles: Array<{ path: string; fileName: string; mimeType: string }>;
  /** External handle saved by an earlier attempt (ComfyUI prompt id, video id), or null. */
  resumeRef: string | null;
  /** Called as soon as an external handle is known, so that it survives a crash. */
  onRef(ref: string): void | Promise<void>;
  signal: AbortSignal;
  /** The object store; outputs go to outputs/<jobId>/ through a temporary key, placed when complete. */
  storage: ObjectStore;
  /** Largest output file accepted. */
  maxOutputBytes: number;
  /** Time-out of each HTTP call. */
  timeoutMs: number;
  /**
   * Origins (scheme://host:port) besides the connector endpoint's own from which files a model names
   * by URL may be downloaded (SVC_CONNECTOR_OUTPUT_ORIGINS); none by default.
   */
  outputOrigins?: readonly string[];
  /** Where authEnv is read from (process.env in the service); read at call time only. */
  env: Readonly<Record<string, string | undefined>>;
  /** Which variables may be read as a credential (src/kernel/credentials.ts); checked at every call. */
  credentials: CredentialPolicy;
}

export interface OutputFile {
  /** Its key in the object store (relative to the storage root), e.g. "outputs/job_x/image-1.png". */
  path: string;
  role: 'image' | 'video' | 'audio' | 'text';
  mimeType: string;
  fileSize: number;
  sha256: string;
}

export interface CallResult {
  /** JSON-safe summary (text, transcript, model, external ids); never a credential. */
  output: Record<string, unknown>;
  files: OutputFile[];
}

/**
 * A failed call. retryable=false fails the job at once (bad image count, collage, missing
 * credential, 4xx other than 408/429); retryable=true goes through backoff until max_attempts.
 */
export class ConnectorError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly httpStatus: number | null;
  constructor(code: string, message: string, retryable: boolean, httpStatus: number | null = null) {
    super(message);
    this.code = code;
    this.retryable = retryable;
    this.httpStatus = httpStatus;
  }
}

/** What the connector dry run (POST /api/adapters/dry-run) shows: the exact request, with header names only. */
export interface DryRunRequest {
  method: 'POST';
  url: string;
  route: string;
  model: string | null;
  headers: string[];
  /** multipart/form-data: `body` lists the form fields, a file field described as { fileName, mimeType, fileSize }. */
  contentType: 'application/json' | 'multipart/form-data';
  body: unknown;
}

export interface ProbeResult {
  ok: boolean;
  latencyMs: number;
  httpStatus: number | null;
  error: string | null;
}
