// comfyui: submits protocol.workflow (API format) with its placeholders filled, polls the history,
// and downloads the files the output nodes produced.
//
// - Placeholders in string values, filled recursively: {{prompt}}, {{negative_prompt}}, {{seed}},
//   {{width}}, {{height}}, {{seconds}}, {{fps}}, {{frames}}, {{job_id}}. A string that is exactly one
//   of the numeric ones ('{{seed}}', '{{width}}', '{{height}}', '{{seconds}}', '{{fps}}',
//   '{{frames}}') becomes a number. seed = parameters.seed, else a number derived from the job id
//   (stable across attempts); width/height = parameters.width/height, else parameters.size 'WxH',
//   else 1024; seconds = parameters.seconds (or .duration), else 4; fps = parameters.fps, else 24;
//   frames = round(seconds x fps). A job bound to a shot has the shot's size and duration in its
//   parameters (src/generation/jobs/format.ts).
// - POST /prompt {prompt: workflow, client_id: jobId} -> {prompt_id}; onRef(prompt_id) at once;
//   GET /history/:id every POLL_MS ({} = not finished). A finished entry whose status_str is
//   'error' is connector_job_failed (retryable). Every QUEUE_CHECK_EVERY polls the queue is
//   checked: a prompt in neither the history nor the queue was lost (ComfyUI restarted) ->
//   connector_job_lost (retryable; the retry resubmits).
// - Outputs: every output node's images[], gifs[] and videos[] entries ({filename, subfolder,
//   type}); entries of type 'temp' (preview nodes) are not outputs and are skipped. Files come from
//   GET /view?filename=&subfolder=&type=, streamed to storage. images[] entries are images (unless
//   their file name says video), gifs[]/videos[] entries are videos. For an image job, exactly one
//   image is required (image_count_mismatch before any download) and only that image is fetched.
// - Resume (resumeRef set after a restart): GET /history/:ref — finished: its outputs are taken
//   (no resubmission); otherwise GET /queue — in queue_running or queue_pending: keep polling the
//   history; in neither (or failed): submit anew (the unknown ref is never reported done).
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectorError } from './types.ts';
import type { CallRequest, CallResult, ConnectorSpec, Execution, OutputFile, ProductionContract } from './types.ts';
import { checkImageCount, downloadOutput, rejectComposite } from './outputs.ts';
import type { OutputRole } from './outputs.ts';
import { joinUrl } from './urls.ts';
import { badResponse, toConnectorError } from './errors.ts';
import { connectorEgress, getHeaders, requestJson } from './transport.ts';
import { deadlineOf, isObject, postPrepared, type Prepared } from './prepared.ts';

export const HEALTH_ROUTE = '/system_stats';
export const SUBMIT_ROUTE = '/prompt';

/** Poll interval (tests may lower it) and how many polls between two queue checks. */
export const tuning = { pollMs: 250, queueCheckEvery: 20 };

export function routeFor(connector: ConnectorSpec, kind: string): string {
  return connector.protocol?.routes?.[kind] || SUBMIT_ROUTE;
}

// ---------------------------------------------------------------------------------------------
// Workflow placeholders

/** A seed from the job id: the first 6 bytes of its SHA-256 (a safe integer, stable per job). */
export function seedOf(jobId: string): number {
  return crypto.createHash('sha256').update(jobId).digest().readUIntBE(0, 6);
}

function intOf(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() ? Number(v) : NaN;
  return Number.isSafeInteger(n) ? n : null;
}

export function placeholders(contract: ProductionContract, execution: Execution): Record<string, string | number> {
  const p = contract.parameters ?? {};
  let width = intOf(p.width);
  let height = intOf(p.height);
  const size = typeof p.size === 'string' ? /^(\d+)\s*[xX]\s*(\d+)$/.exec(p.size.trim()) : null;
  if (size) {
    width ??= Number(size[1]);
    height ??= Number(size[2]);
  }
  const seconds = positiveOf(p.seconds) ?? positiveOf(p.duration) ?? DEFAULT_SECONDS;
  const fps = positiveOf(p.fps) ?? DEFAULT_FPS;
  return {
    prompt: contract.prompt,
    negative_prompt: contract.negativePrompt ?? '',
    seed: intOf(p.seed) ?? seedOf(execution.jobId),
    width: width ?? 1024,
    height: height ?? 1024,
    seconds,
    fps,
    frames: Math.max(1, Math.round(seconds * fps)),
    job_id: execution.jobId,
  };
}

const DEFAULT_SECONDS = 4;
const DEFAULT_FPS = 24;

/** A positive finite number (or a string holding one), else null. */
function positiveOf(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() ? Number(v) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

const NUMERIC = new Set(['seed', 'width', 'height', 'seconds', 'fps', 'frames']);
const PLACEHOLDER = /\{\{\s*([a-z_]+)\s*\}\}/g;

/** A copy of `value` with the placeholders of every string filled (unknown ones left as they are). */
export function fillWorkflow(value: unknown, values: Record<string, string | number>): unknown {
  if (typeof value === 'string') {
    const exact = /^\{\{\s*([a-z_]+)\s*\}\}$/.exec(value);
    if (exact && NUMERIC.has(exact[1]) && exact[1] in values) return Number(values[exact[1]]);
    if (!value.includes('{{')) return value;
    return value.replace(PLACEHOLDER, (m, name: string) => (name in values ? String(values[name]) : m));
  }
  if (Array.isArray(value)) return value.map((v) => fillWorkflow(v, values));
  if (isObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = fillWorkflow(v, values);
    return out;
  }
  return value;
}

export function build(connector: ConnectorSpec, contract: ProductionContract, execution: Execution): Prepared {
  const workflow = connector.protocol?.workflow;
  if (!isObject(workflow) || Object.keys(workflow).length === 0) {
    throw new ConnectorError('connector_bad_request', 'the comfyui connector has no protocol.workflow', false);
  }
  const route = routeFor(connector, execution.kind);
  return {
    url: joinUrl(connector.endpoint, route),
    route,
    model: null,
    contentType: 'application/json',
    body: { prompt: fillWorkflow(workflow, placeholders(contract, execution)), client_id: execution.jobId },
  };
}

// ---------------------------------------------------------------------------------------------
// History, queue, outputs

interface Entry {
  failed: boolean;
  message: string | null;
  outputs: Record<string, unknown>;
}

interface ViewFile {
  list: 'images' | 'gifs' | 'videos';
  filename: string;
  subfolder: string;
  type: string;
}

const VIDEO_EXT = /\.(mp4|webm|mov|mkv|avi)$/i;

function entryOf(json: unknown, id: string): Entry | null {
  if (!isObject(json)) throw badResponse('the ComfyUI history is not a JSON object');
  const e = json[id];
  if (e === undefined) return null;
  if (!isObject(e)) throw badResponse('the ComfyUI history entry is not an object');
  const status = isObject(e.status) ? e.status : {};
  const failed = status.status_str === 'error';
  let message: string | null = null;
  if (failed && Array.isArray(status.messages)) {
    for (const m of status.messages) {
      if (Array.isArray(m) && m[0] === 'execution_error' && isObject(m[1]) && typeof m[1].exception_message === 'string') message = m[1].exception_message;
    }
  }
  return { failed, message, outputs: isObject(e.outputs) ? e.outputs : {} };
}

function filesOf(entry: Entry): ViewFile[] {
  const files: ViewFile[] = [];
  for (const node of Object.values(entry.outputs)) {
    if (!isObject(node)) continue;
    for (const list of ['images', 'gifs', 'videos'] as const) {
      const items = node[list];
      if (!Array.isArray(items)) continue;
      for (const it of items) {
        if (!isObject(it) || typeof it.filename !== 'string' || !it.filename) continue;
        const type = typeof it.type === 'string' ? it.type : 'output';
        if (type === 'temp') continue;
        files.push({
          list,
          filename: it.filename,
          subfolder: typeof it.subfolder === 'string' ? it.subfolder : '',
          type,
        });
      }
    }
  }
  return files;
}

const roleOf = (f: ViewFile): OutputRole => (f.list === 'images' && !VIDEO_EXT.test(f.filename) ? 'image' : 'video');

function queued(json: unknown, id: string): boolean {
  if (!isObject(json)) throw badResponse('the ComfyUI queue is not a JSON object');
  for (const key of ['queue_running', 'queue_pending']) {
    const list = json[key];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      if (Array.isArray(item) ? item[1] === id || item.includes(id) : isObject(item) && item.prompt_id === id) return true;
    }
  }
  return false;
}

export async function call(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const endpoint = req.connector.endpoint;
  const get = (route: string) =>
    requestJson({ method: 'GET', url: joinUrl(endpoint, route), headers: getHeaders(secret), timeoutMs: req.timeoutMs, signal: req.signal, secret, egress: connectorEgress(req.connector) });
  const history = async (id: string) => entryOf(await get(`/history/${encodeURIComponent(id)}`), id);
  const inQueue = async (id: string) => queued(await get('/queue'), id);

  let id: string | null = null;
  let entry: Entry | null = null;
  let resumed = false;
  if (req.resumeRef) {
    const ref = req.resumeRef;
    const found = await history(ref);
    if (found && !found.failed) {
      id = ref;
      entry = found;
      resumed = true;
    } else if (!found && (await inQueue(ref))) {
      id = ref;
      resumed = true;
    } else if (!found) {
      // Between the two reads it may just have finished.
      const again = await history(ref);
      if (again && !again.failed) {
        id = ref;
        entry = again;
        resumed = true;
      }
    }
  }
  if (!id) {
    const submitted = await postPrepared(req, prep, secret);
    if (!isObject(submitted) || typeof submitted.prompt_id !== 'string' || !submitted.prompt_id) {
      throw badResponse('the ComfyUI submission answered no prompt_id');
    }
    id = submitted.prompt_id;
    await req.onRef(id);
  }

  const deadline = deadlineOf(req.execution.deadline);
  let polls = 0;
  while (!entry) {
    if (Date.now() + tuning.pollMs > deadline) {
      throw new ConnectorError('connector_timeout', `ComfyUI prompt ${id} did not finish before the job's deadline`, true);
    }
    try {
      await sleep(tuning.pollMs, undefined, { signal: req.signal });
    } catch (err) {
      throw toConnectorError(err, secret, 'waiting');
    }
    entry = await history(id);
    if (!entry && ++polls % tuning.queueCheckEvery === 0 && !(await inQueue(id))) {
      entry = await history(id);
      if (!entry) throw new ConnectorError('connector_job_lost', `ComfyUI prompt ${id} is in neither the history nor the queue`, true);
    }
  }
  if (entry.failed) {
    throw new ConnectorError('connector_job_failed', `the ComfyUI prompt failed${entry.message ? `: ${entry.message.slice(0, 200)}` : ''}`, true);
  }

  let files = filesOf(entry);
  const isImage = req.execution.kind === 'image';
  if (isImage) {
    files = files.filter((f) => roleOf(f) === 'image');
    checkImageCount(files.length);
  }
  const saved: OutputFile[] = [];
  const counters: Record<OutputRole, number> = { image: 0, video: 0, audio: 0, text: 0 };
  for (const f of files) {
    const role = roleOf(f);
    const query = new URLSearchParams({ filename: f.filename, subfolder: f.subfolder, type: f.type }).toString();
    const file = await downloadOutput({
      url: `${joinUrl(endpoint, '/view')}?${query}`,
      req,
      secret,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      storage: req.storage,
      jobId: req.execution.jobId,
      role,
      index: ++counters[role],
      fileName: f.filename,
      maxBytes: req.maxOutputBytes,
    });
    if (isImage) await rejectComposite(req.storage, file, req.signal);
    saved.push(file);
  }
  return { output: { promptId: id, resumed }, files: saved };
}
