// A ComfyUI-compatible bridge: POST /prompt takes an API-format workflow (nodes keyed by id, each
// {class_type, inputs}), renders its output nodes asynchronously, and the client polls
// /history/:id ({} until finished) and fetches files from /view, as it would from ComfyUI. Only
// what a client reads is modelled: the prompt text, the size, a video's length, and which nodes save
// what.
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { imagePlan, type FaultControl, type Faults } from './faults.ts';
import { cachedFile } from './files.ts';
import { HttpError, invalid, readJson, type Call, type Reply, type Route } from './http.ts';
import { isRecord, optionalString, requiredRecord, SIZE_LIMITS, type Body } from './input.ts';
import { remember } from './memory.ts';
import type { Rendered, Renderer } from './render.ts';
import { IMAGE_DEFAULT, VIDEO_DEFAULT, VIDEO_SECONDS, type Size } from './scenes.ts';

const VIDEO_NODES = new Set(['SaveVideo', 'VHS_VideoCombine', 'SaveAnimatedWEBP', 'SaveWEBM']);
const IMAGE_NODES = new Set(['SaveImage']);

interface Node { class_type: string; inputs: Body }
interface FileRef { filename: string; subfolder: ''; type: 'output'; format?: string }
type NodeOutput = { images: FileRef[] } | { gifs: FileRef[] };

interface Entry {
  id: string;
  number: number;
  workflow: Record<string, Node>;
  clientId: string | null;
  outputNodes: string[];
  done: boolean;
  outputs: Record<string, NodeOutput>;
  error: string | null;
}

function parseWorkflow(value: Body): Record<string, Node> {
  const ids = Object.keys(value);
  if (!ids.length) throw invalid('"prompt" must hold the workflow\'s nodes');
  for (const id of ids) {
    const node = value[id];
    if (!isRecord(node) || typeof node.class_type !== 'string' || !isRecord(node.inputs)) {
      throw invalid(`node ${id} must be {"class_type": string, "inputs": object}`);
    }
  }
  return value as Record<string, Node>;
}

/** The text of the first CLIPTextEncode node, else the first string input named text or prompt. */
function promptText(workflow: Record<string, Node>): string | null {
  const nodes = Object.values(workflow);
  const clip = nodes.find((n) => n.class_type === 'CLIPTextEncode' && typeof n.inputs.text === 'string');
  if (clip) return clip.inputs.text as string;
  for (const n of nodes) {
    for (const key of ['text', 'prompt']) if (typeof n.inputs[key] === 'string') return n.inputs[key];
  }
  return null;
}

const clampSide = (n: number) => Math.min(SIZE_LIMITS.max, Math.max(SIZE_LIMITS.min, Math.round(n)));

/** The first node with numeric width and height inputs (EmptyLatentImage and friends) sets the size. */
function workflowSize(workflow: Record<string, Node>): Size | null {
  for (const n of Object.values(workflow)) {
    const { width, height } = n.inputs;
    if (typeof width === 'number' && typeof height === 'number') return { width: clampSide(width), height: clampSide(height) };
  }
  return null;
}

const clampSeconds = (n: number) => Math.min(VIDEO_SECONDS.max, Math.max(VIDEO_SECONDS.min, n));

/**
 * A video's length from the workflow: the first node with a numeric `seconds` input, else with a
 * frame count (`length`, `frames` or `frame_count`) over its rate (`frame_rate` or `fps`, default 24).
 */
function workflowSeconds(workflow: Record<string, Node>): number | null {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null);
  for (const n of Object.values(workflow)) {
    const seconds = num(n.inputs.seconds);
    if (seconds) return clampSeconds(seconds);
    const frames = num(n.inputs.length) ?? num(n.inputs.frames) ?? num(n.inputs.frame_count);
    if (frames) return clampSeconds(frames / (num(n.inputs.frame_rate) ?? num(n.inputs.fps) ?? VIDEO_DEFAULT.fps));
  }
  return null;
}

function fileRef(file: Rendered, video: boolean): FileRef {
  return { filename: file.name, subfolder: '', type: 'output', ...(video ? { format: 'video/h264-mp4' } : {}) };
}

function historyEntry(e: Entry): Body {
  const status = e.error
    ? { status_str: 'error', completed: false, messages: [['execution_error', { prompt_id: e.id, exception_message: e.error }]] }
    : { status_str: 'success', completed: true, messages: [] };
  return { prompt: queueItem(e), outputs: e.outputs, status, meta: {} };
}

function queueItem(e: Entry): unknown[] {
  return [e.number, e.id, e.workflow, { client_id: e.clientId }, e.outputNodes];
}

export function comfyRoutes(renderer: Renderer, faults: FaultControl): Route[] {
  const entries = new Map<string, Entry>();
  let number = 0;

  async function renderNode(node: Node, text: string, size: Size | null, seconds: number | null, shape: Readonly<Faults>): Promise<NodeOutput> {
    if (VIDEO_NODES.has(node.class_type)) {
      const s = size ? { width: size.width & ~1, height: size.height & ~1 } : { width: VIDEO_DEFAULT.width, height: VIDEO_DEFAULT.height };
      const file = await renderer.render({ kind: 'video', prompt: text, ...s, seconds: seconds ?? VIDEO_DEFAULT.seconds, fps: VIDEO_DEFAULT.fps });
      return { gifs: [fileRef(file, true)] };
    }
    const files = await Promise.all(imagePlan(shape, text, size ?? IMAGE_DEFAULT, 1).map((spec) => renderer.render(spec)));
    return { images: files.map((f) => fileRef(f, false)) };
  }

  /** Renders every output node; the entry is finished (success or error) when this settles. */
  async function execute(entry: Entry, text: string, size: Size | null, seconds: number | null, shape: Readonly<Faults>): Promise<void> {
    try {
      const outputs = await Promise.all(entry.outputNodes.map((id) => renderNode(entry.workflow[id], text, size, seconds, shape)));
      entry.outputs = Object.fromEntries(entry.outputNodes.map((id, i) => [id, outputs[i]]));
    } catch (err) {
      entry.error = err instanceof Error ? err.message : String(err);
    }
    entry.done = true;
  }

  async function submit({ req }: Call): Promise<Reply> {
    const body = await readJson(req);
    const workflow = parseWorkflow(requiredRecord(body, 'prompt'));
    const clientId = optionalString(body, 'client_id', 200) ?? null;
    const text = promptText(workflow);
    if (text === null) throw invalid('the workflow has no prompt text (a CLIPTextEncode "text" input, or an input named text or prompt)');
    const outputNodes = Object.keys(workflow).filter((id) => IMAGE_NODES.has(workflow[id].class_type) || VIDEO_NODES.has(workflow[id].class_type));
    if (!outputNodes.length) throw new HttpError(400, 'Prompt has no outputs', 'prompt_no_outputs');
    const entry: Entry = { id: randomUUID(), number: number++, workflow, clientId, outputNodes, done: false, outputs: {}, error: null };
    remember(entries, entry.id, entry);
    void execute(entry, text, workflowSize(workflow), workflowSeconds(workflow), faults.current);
    return { status: 200, json: { prompt_id: entry.id, number: entry.number, node_errors: {} } };
  }

  function history({ params, query }: Call): Reply {
    if (params.id !== undefined) {
      const e = entries.get(params.id);
      return { status: 200, json: e?.done ? { [e.id]: historyEntry(e) } : {} };
    }
    const maxItems = Number(new URLSearchParams(query).get('max_items'));
    const done = [...entries.values()].filter((e) => e.done);
    const shown = maxItems > 0 ? done.slice(-maxItems) : done;
    return { status: 200, json: Object.fromEntries(shown.map((e) => [e.id, historyEntry(e)])) };
  }

  function queue(): Reply {
    const running = [...entries.values()].filter((e) => !e.done).map(queueItem);
    return { status: 200, json: { queue_running: running, queue_pending: [] } };
  }

  function view({ query }: Call): Promise<Reply> {
    const filename = new URLSearchParams(query).get('filename');
    if (!filename) throw new HttpError(400, '"filename" is required');
    return cachedFile(renderer, filename);
  }

  const systemStats = (): Reply => ({
    status: 200,
    json: {
      system: {
        os: process.platform, comfyui_version: 'svc-model-server', python_version: 'none', pytorch_version: 'none',
        embedded_python: false, ram_total: os.totalmem(), ram_free: os.freemem(), argv: [],
      },
      devices: [],
    },
  });

  return [
    { method: 'GET', pattern: '/system_stats', handler: systemStats },
    { method: 'POST', pattern: '/prompt', generation: true, handler: submit },
    { method: 'GET', pattern: '/history', handler: history },
    { method: 'GET', pattern: '/history/:id', handler: history },
    { method: 'GET', pattern: '/queue', handler: queue },
    { method: 'GET', pattern: '/view', handler: view },
  ];
}
