// openai-compatible: route and model per kind of work (protocol.routes / protocol.models, with the
// defaults below), Bearer credential.
//
// - image:  POST /v1/images/generations {model, prompt, n: 1, size?, response_format: 'url'}
//           -> {data: [{url} | {b64_json}]}; data must hold exactly one item (checked before any
//           download), then the saved image must not be a composite.
// - video:  POST /v1/videos {model, prompt, seconds?, size?} -> {id}; with an image among the
//           inputs (the first input whose mimeType is image/*, e.g. the picture of an image job the
//           video depends on) the same fields go as multipart/form-data with that file streamed from
//           disk as `input_reference` (image-to-video). onRef(id) at once; GET
//           /v1/videos/:id every POLL_MS until status completed (or failed); then GET
//           /v1/videos/:id/content streamed to storage. With resumeRef the create is skipped and the
//           stored id polled; when that id is unknown (404) or its generation failed, a new video is
//           created. A failed generation is connector_job_failed, retryable (a provider failure is
//           often transient; the job's attempt budget bounds it).
// - tts:    POST /v1/audio/speech {model, input, voice?, response_format: 'wav'} -> audio bytes.
// - asr:    POST /v1/audio/transcriptions multipart (file = first input file, model, language?)
//           -> {text}.
// - chat, prompt: POST /v1/chat/completions {model, messages: [system: production context, user:
//           prompt]} -> output.text = choices[0].message.content.
// A multipart request's dry-run body lists its fields and describes the file as { fileName, mimeType,
// fileSize }; the call streams the file (postForm).
import fs from 'node:fs';
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Readable } from 'node:stream';
import { ConnectorError } from './types.ts';
import type { CallRequest, CallResult, ConnectorSpec, ContractInput, Execution, ProductionContract } from './types.ts';
import { checkImageCount, downloadOutput, mimeFor, outputName, rejectComposite, saveOutput, storeAnswered } from './outputs.ts';
import { joinUrl } from './urls.ts';
import { badResponse, toConnectorError } from './errors.ts';
import { connectorEgress, ensureOk, getHeaders, jsonHeaders, requestJson, send } from './transport.ts';
import { deadlineOf, fileJsonLimit, isObject, modelFor, postPrepared, type Prepared } from './prepared.ts';

export const DEFAULT_ROUTES: Readonly<Record<string, string>> = {
  image: '/v1/images/generations',
  video: '/v1/videos',
  tts: '/v1/audio/speech',
  asr: '/v1/audio/transcriptions',
  chat: '/v1/chat/completions',
  prompt: '/v1/chat/completions',
};

export const HEALTH_ROUTE = '/v1/models';

/** Poll interval of video generations (tests may lower it). */
export const tuning = { pollMs: 250 };

/** The route of a kind: the configured one, else the default; null when neither (or configured ''). */
export function routeFor(connector: ConnectorSpec, kind: string): string | null {
  const configured = connector.protocol?.routes?.[kind];
  if (configured !== undefined) return configured || null;
  return DEFAULT_ROUTES[kind] ?? null;
}

/** Kinds this protocol knows how to speak (a route alone does not say what body to send). */
export const KINDS = new Set(Object.keys(DEFAULT_ROUTES));

function str(v: unknown): string | null {
  if (typeof v === 'string' && v.trim()) return v.trim();
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return null;
}

/** 'WxH' from parameters.size, or parameters.width/height. */
export function sizeOf(p: Record<string, unknown>): string | null {
  const size = str(p.size);
  if (size) return size;
  const w = Number(p.width);
  const h = Number(p.height);
  return Number.isInteger(w) && Number.isInteger(h) && w > 0 && h > 0 ? `${w}x${h}` : null;
}

/** A short production context for chat: project, episode, shot. */
export function contextLine(c: ProductionContract): string {
  let s = `Production context: project "${c.project.name}"`;
  if (c.episode) s += `, episode ${c.episode.number} "${c.episode.title}"`;
  if (c.shot) {
    s += `, shot ${c.shot.code} "${c.shot.title}"`;
    if (c.shot.description) s += `: ${c.shot.description.length > 300 ? `${c.shot.description.slice(0, 300)}...` : c.shot.description}`;
  }
  return `${s}.`;
}

/** Index of the video's reference picture among the inputs: the first image, or -1. */
const referenceIndex = (c: ProductionContract) => c.inputs.findIndex((i) => i.mimeType.startsWith('image/'));

/** How a multipart body describes its file part. */
const describeFile = (i: ContractInput) => ({ fileName: i.fileName, mimeType: i.mimeType, fileSize: i.fileSize });

/** The first request of a call (shared by dryRun and the call). */
export function build(connector: ConnectorSpec, contract: ProductionContract, execution: Execution): Prepared {
  const kind = execution.kind;
  const route = KINDS.has(kind) ? routeFor(connector, kind) : null;
  if (!route) throw new ConnectorError('connector_unsupported_kind', `the connector has no route for ${kind} work`, false);
  const url = joinUrl(connector.endpoint, route);
  const model = modelFor(connector, kind, execution.model);
  const p = contract.parameters ?? {};
  const body: Record<string, unknown> = {};
  if (model !== null) body.model = model;
  switch (kind) {
    case 'chat':
    case 'prompt':
      body.messages = [
        { role: 'system', content: contextLine(contract) },
        { role: 'user', content: contract.prompt },
      ];
      break;
    case 'image': {
      body.prompt = contract.prompt;
      body.n = 1;
      const size = sizeOf(p);
      if (size) body.size = size;
      body.response_format = 'url';
      break;
    }
    case 'video': {
      body.prompt = contract.prompt;
      const seconds = str(p.seconds) ?? str(p.duration);
      if (seconds) body.seconds = seconds;
      const size = sizeOf(p);
      if (size) body.size = size;
      const reference = referenceIndex(contract);
      if (reference < 0) break;
      body.input_reference = describeFile(contract.inputs[reference]);
      return { url, route, model, contentType: 'multipart/form-data', body };
    }
    case 'tts': {
      body.input = contract.prompt;
      const voice = str(p.voice);
      if (voice) body.voice = voice;
      body.response_format = 'wav';
      break;
    }
    case 'asr': {
      const first = contract.inputs[0];
      body.file = first ? describeFile(first) : null;
      const language = str(p.language);
      if (language) body.language = language;
      return { url, route, model, contentType: 'multipart/form-data', body };
    }
  }
  return { url, route, model, contentType: 'application/json', body };
}

export async function call(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  switch (req.execution.kind) {
    case 'chat':
    case 'prompt':
      return chat(req, prep, secret);
    case 'image':
      return image(req, prep, secret);
    case 'video':
      return video(req, prep, secret);
    case 'tts':
      return tts(req, prep, secret);
    case 'asr':
      return asr(req, prep, secret);
  }
  throw new ConnectorError('connector_unsupported_kind', `the connector has no route for ${req.execution.kind} work`, false);
}

// ---------------------------------------------------------------------------------------------

async function chat(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const json = (await postPrepared(req, prep, secret)) as { choices?: Array<{ message?: { content?: unknown } }>; model?: unknown } | null;
  const text = json?.choices?.[0]?.message?.content;
  if (typeof text !== 'string') throw badResponse('the chat response has no choices[0].message.content');
  return { output: { text, model: typeof json?.model === 'string' ? json.model : prep.model }, files: [] };
}

async function image(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const json = await postPrepared(req, prep, secret, fileJsonLimit(req.maxOutputBytes));
  const data = isObject(json) ? json.data : undefined;
  if (!Array.isArray(data)) throw badResponse('the image response has no data array');
  checkImageCount(data.length);
  const item = data[0] as { url?: unknown; b64_json?: unknown; revised_prompt?: unknown };
  const url = typeof item?.url === 'string' && item.url ? item.url : null;
  const base64 = typeof item?.b64_json === 'string' && item.b64_json ? item.b64_json : null;
  if (url === null && base64 === null) throw badResponse('the image response item has neither url nor b64_json');
  const file = await storeAnswered(req, secret, { role: 'image', index: 1, url, base64, declaredMime: null, sniff: sniffImage });
  await rejectComposite(req.storage, file, req.signal);
  const output: Record<string, unknown> = { model: prep.model };
  if (typeof item.revised_prompt === 'string') output.revisedPrompt = item.revised_prompt;
  return { output, files: [file] };
}

/** The MIME type of image bytes from their signature (PNG, JPEG, WebP, GIF) or null. */
export function sniffImage(b: Buffer): string | null {
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  if (b.length >= 6 && b.toString('latin1', 0, 4) === 'GIF8') return 'image/gif';
  return null;
}

// ---------------------------------------------------------------------------------------------
// video: create, poll, download

interface VideoState {
  done: boolean;
  failed: boolean;
  message: string | null;
}

const VIDEO_DONE = new Set(['completed', 'succeeded', 'success', 'done']);
const VIDEO_FAILED = new Set(['failed', 'error', 'cancelled', 'canceled', 'expired']);

function videoState(json: unknown): VideoState {
  if (!isObject(json)) throw badResponse('the video status is not a JSON object');
  const status = typeof json.status === 'string' ? json.status.toLowerCase() : '';
  const err = json.error;
  const message = isObject(err) && typeof err.message === 'string' ? err.message : typeof err === 'string' ? err : null;
  return { done: VIDEO_DONE.has(status), failed: VIDEO_FAILED.has(status), message };
}

async function video(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const itemUrl = (id: string) => `${prep.url.replace(/\/+$/, '')}/${encodeURIComponent(id)}`;
  const poll = async (id: string) =>
    videoState(await requestJson({ method: 'GET', url: itemUrl(id), headers: getHeaders(secret), timeoutMs: req.timeoutMs, signal: req.signal, secret, egress: connectorEgress(req.connector) }));

  let id: string | null = null;
  let state: VideoState | null = null;
  let resumed = false;
  if (req.resumeRef) {
    try {
      state = await poll(req.resumeRef);
      if (state.failed) state = null; // the earlier attempt's generation failed: start a new one
      else {
        id = req.resumeRef;
        resumed = true;
      }
    } catch (err) {
      if (!(err instanceof ConnectorError && err.httpStatus === 404)) throw err;
    }
  }
  if (!id) {
    const created = prep.contentType === 'multipart/form-data'
      ? await postForm(req, prep, secret, 'input_reference', req.inputFiles[referenceIndex(req.contract)])
      : await postPrepared(req, prep, secret);
    if (!isObject(created) || typeof created.id !== 'string' || !created.id) throw badResponse('the video creation answered no id');
    id = created.id;
    await req.onRef(id);
    state = videoState(created);
  }
  const deadline = deadlineOf(req.execution.deadline);
  while (!state!.done && !state!.failed) {
    if (Date.now() + tuning.pollMs > deadline) {
      throw new ConnectorError('connector_timeout', `video ${id} did not finish before the job's deadline`, true);
    }
    try {
      await sleep(tuning.pollMs, undefined, { signal: req.signal });
    } catch (err) {
      throw toConnectorError(err, secret, 'waiting');
    }
    state = await poll(id);
  }
  if (state!.failed) {
    throw new ConnectorError('connector_job_failed', `the video generation failed${state!.message ? `: ${state!.message.slice(0, 200)}` : ''}`, true);
  }
  const file = await downloadOutput({
    url: `${itemUrl(id)}/content`,
    req,
    secret,
    timeoutMs: req.timeoutMs,
    signal: req.signal,
    storage: req.storage,
    jobId: req.execution.jobId,
    role: 'video',
    index: 1,
    maxBytes: req.maxOutputBytes,
  });
  return { output: { model: prep.model, videoId: id, resumed }, files: [file] };
}

// ---------------------------------------------------------------------------------------------

async function tts(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const resp = await send({
    method: 'POST',
    url: prep.url,
    headers: jsonHeaders(secret),
    body: JSON.stringify(prep.body),
    timeoutMs: req.timeoutMs,
    signal: req.signal,
    secret,
    egress: connectorEgress(req.connector),
  });
  await ensureOk(resp, 'POST', secret);
  const declared = Number(resp.headers['content-length']);
  if (Number.isFinite(declared) && declared > req.maxOutputBytes) {
    resp.body.destroy();
    throw new ConnectorError('output_too_large', `the output exceeds the largest accepted size (${req.maxOutputBytes} bytes)`, false);
  }
  const mime = mimeFor('audio', [resp.headers['content-type']]);
  const file = await saveOutput({
    storage: req.storage,
    jobId: req.execution.jobId,
    name: outputName('audio', 1, mime),
    role: 'audio',
    mimeType: mime,
    source: resp.body,
    maxBytes: req.maxOutputBytes,
    signal: req.signal,
  });
  const output: Record<string, unknown> = { model: prep.model };
  if (prep.body.voice) output.voice = prep.body.voice;
  return { output, files: [file] };
}

const quote = (s: string) => s.replace(/["\\\r\n]/g, '_');

/**
 * POSTs a prepared multipart request: the body's plain values as form fields and `input` streamed
 * from disk as the file part `field` (the body's description of that file is not sent); the
 * answer parsed as JSON.
 */
async function postForm(
  req: CallRequest, prep: Prepared, secret: string | null, field: string, input: CallRequest['inputFiles'][number] | undefined, limit?: number,
): Promise<unknown> {
  if (!input) throw new ConnectorError('connector_bad_request', `the ${field} file is not available`, false);
  let size: number;
  try {
    size = fs.statSync(input.path).size;
  } catch {
    throw new ConnectorError('connector_bad_request', `the input file ${input.fileName} is not in storage`, false);
  }
  const boundary = `----svc${crypto.randomBytes(12).toString('hex')}`;
  let head = '';
  for (const [k, v] of Object.entries(prep.body)) {
    if (k === field || v === null || v === undefined) continue;
    // build() puts only strings and numbers in a multipart body (objects go only into JSON bodies)
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- see above
    head += `--${boundary}\r\ncontent-disposition: form-data; name="${quote(k)}"\r\n\r\n${String(v)}\r\n`;
  }
  head += `--${boundary}\r\ncontent-disposition: form-data; name="${quote(field)}"; filename="${quote(input.fileName)}"\r\ncontent-type: ${input.mimeType || 'application/octet-stream'}\r\n\r\n`;
  const headBuf = Buffer.from(head, 'utf8');
  const tailBuf = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  const file = fs.createReadStream(input.path);
  const stream = Readable.from(
    (async function* () {
      yield headBuf;
      for await (const chunk of file) yield chunk as Buffer;
      yield tailBuf;
    })(),
    { objectMode: false },
  );
  const headers: Record<string, string | number> = {
    'content-type': `multipart/form-data; boundary=${boundary}`,
    'content-length': headBuf.length + size + tailBuf.length,
  };
  if (secret) headers.authorization = `Bearer ${secret}`;
  try {
    return await requestJson({ method: 'POST', url: prep.url, headers, body: stream, timeoutMs: req.timeoutMs, signal: req.signal, secret, egress: connectorEgress(req.connector), ...(limit === undefined ? {} : { limit }) });
  } finally {
    file.destroy();
    stream.destroy();
  }
}

async function asr(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const input = req.inputFiles[0];
  if (!input) throw new ConnectorError('connector_bad_request', 'transcription needs an input audio file; the job has none', false);
  const json = await postForm(req, prep, secret, 'file', input, 16 * 1024 * 1024);
  if (!isObject(json) || typeof json.text !== 'string') throw badResponse('the transcription response has no text');
  const output: Record<string, unknown> = { text: json.text, model: prep.model };
  if (typeof json.language === 'string') output.language = json.language;
  return { output, files: [] };
}
