// The openai-compatible routes: images, videos (create, poll, content), speech, transcriptions and
// chat completions, with OpenAI's request and response shapes. Chat is the hot path: no file
// system, no process, one JSON parse and one stringify.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import { sniffMime } from '../../src/kernel/files.ts';
import { imagePlan, type FaultControl } from './faults.ts';
import { fileReply, fileUrl } from './files.ts';
import { HttpError, invalid, readBody, readJson, type Call, type Reply, type Route } from './http.ts';
import { isRecord, optionalEnum, optionalInt, optionalNumber, optionalString, parseSize, requiredString, type Body } from './input.ts';
import { remember } from './memory.ts';
import { formOf, isMultipart, parseMultipart } from './multipart.ts';
import { pictureSize } from './picture.ts';
import type { Renderer, Rendered } from './render.ts';
import { IMAGE_DEFAULT, VIDEO_DEFAULT, VIDEO_SECONDS } from './scenes.ts';
import { chatReply, tokens, transcript } from './text.ts';

export const MODELS = ['svc-image', 'svc-video', 'svc-tts', 'svc-asr', 'svc-chat'] as const;
const MAX_IMAGES = 10;
const SPEECH_MAX_CHARS = 4096;
/** OpenAI's own upload limit for transcriptions. */
const UPLOAD_LIMIT = 25 * 1024 * 1024;
/** Multipart video creations reading or holding their upload at once (each up to 25 MiB); more are 429. */
export const MAX_VIDEO_UPLOADS = 4;
/** The largest side of a reference picture, in pixels, as its header declares it (ffmpeg decodes and scales it). */
export const MAX_REFERENCE_SIDE = 4096;

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface VideoJob {
  id: string;
  model: string;
  created_at: number;
  seconds: number;
  size: string;
  status: 'queued' | 'in_progress' | 'completed' | 'failed';
  file: Rendered | null;
  error: string | null;
  /** The input_reference picture as received (svc's extension of the video object). */
  reference: { mime_type: string; size: number; sha256: string } | null;
}

function presentVideo(v: VideoJob): Body {
  const progress = v.status === 'completed' ? 100 : v.status === 'in_progress' ? 50 : 0;
  return {
    id: v.id, object: 'video', model: v.model, status: v.status, progress, created_at: v.created_at,
    seconds: String(v.seconds), size: v.size, ...(v.reference ? { input_reference: v.reference } : {}),
    ...(v.error ? { error: { message: v.error } } : {}),
  };
}

const REFERENCE_TYPES = new Set(['image/png', 'image/jpeg']);

/**
 * A video creation's fields and reference picture: a JSON body, or multipart/form-data with the
 * fields as plain parts and an optional `input_reference` file part, a PNG or JPEG by its bytes whose
 * header declares 1 to MAX_REFERENCE_SIDE pixels a side.
 */
async function videoRequest(req: Call['req']): Promise<{ body: Body; picture: { data: Buffer; mimeType: string } | null }> {
  if (!isMultipart(req.headers['content-type'])) return { body: await readJson(req), picture: null };
  const { fields, files } = formOf(parseMultipart(req.headers['content-type'], await readBody(req, UPLOAD_LIMIT)));
  if ('input_reference' in fields) throw new HttpError(400, '"input_reference" must be a file part');
  const unexpected = files.find((f) => f.name !== 'input_reference');
  if (unexpected) throw new HttpError(400, `unexpected file part "${unexpected.name.slice(0, 64)}"; only "input_reference" is a file`);
  if (files.length > 1) throw new HttpError(400, 'one "input_reference" file at most');
  if (!files[0]) return { body: fields, picture: null };
  const mimeType = sniffMime(files[0].data.subarray(0, 64));
  if (!REFERENCE_TYPES.has(mimeType)) throw new HttpError(400, '"input_reference" must be a PNG or JPEG picture');
  const size = pictureSize(files[0].data);
  if (!size) throw new HttpError(400, `"input_reference" has an unreadable ${mimeType === 'image/png' ? 'PNG' : 'JPEG'} header`);
  const fits = (side: number) => side >= 1 && side <= MAX_REFERENCE_SIDE;
  if (!fits(size.width) || !fits(size.height)) {
    throw new HttpError(400, `"input_reference" must be 1 to ${MAX_REFERENCE_SIDE} pixels on each side, not ${size.width}x${size.height}`);
  }
  return { body: fields, picture: { data: files[0].data, mimeType } };
}

/** Text of a chat message's content: a string, or the text parts of an array of parts. */
function contentText(content: unknown, index: number): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('');
  }
  throw invalid(`"messages[${index}].content" must be a string or an array of parts`);
}

async function chatCompletion({ req }: Call, seq: { n: number }): Promise<Reply> {
  const body = await readJson(req);
  const model = optionalString(body, 'model', 200) ?? 'svc-chat';
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('"messages" must be a non-empty array');
  let promptChars = 0;
  let lastUser: string | null = null;
  let last = '';
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isRecord(m) || typeof m.role !== 'string') throw invalid(`"messages[${i}].role" must be a string`);
    last = contentText(m.content, i);
    promptChars += last.length;
    if (m.role === 'user') lastUser = last;
  }
  const content = chatReply(lastUser ?? last);
  const promptTokens = tokens(promptChars);
  const completionTokens = tokens(content.length);
  return {
    status: 200,
    json: {
      id: `chatcmpl-svc${(++seq.n).toString(36)}`, object: 'chat.completion', created: nowSeconds(), model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    },
  };
}

async function transcription({ req }: Call): Promise<Reply> {
  const parts = parseMultipart(req.headers['content-type'], await readBody(req, UPLOAD_LIMIT));
  const file = parts.find((p) => p.name === 'file' && p.fileName !== null);
  if (!file) throw invalid('"file" is required (a file part)');
  if (!parts.some((p) => p.name === 'model' && p.fileName === null && p.data.length > 0)) throw invalid('"model" is required');
  const sha = createHash('sha256').update(file.data).digest('hex');
  return { status: 200, json: { text: transcript(file.fileName!, file.data.length, sha) } };
}

export function openaiRoutes(renderer: Renderer, faults: FaultControl): Route[] {
  const videos = new Map<string, VideoJob>();
  const chatSeq = { n: 0 };
  let uploads = 0;

  async function images({ req, base }: Call): Promise<Reply> {
    const body = await readJson(req);
    const prompt = requiredString(body, 'prompt');
    optionalString(body, 'model', 200);
    const n = optionalInt(body, 'n', 1, MAX_IMAGES) ?? 1;
    const size = parseSize(body.size, 'size', IMAGE_DEFAULT);
    const format = optionalEnum(body, 'response_format', ['url', 'b64_json'] as const) ?? 'url';
    const files = await Promise.all(imagePlan(faults.current, prompt, size, n).map((spec) => renderer.render(spec)));
    const data = await Promise.all(files.map(async (f) => (format === 'url'
      ? { url: fileUrl(base, f), revised_prompt: prompt }
      : { b64_json: (await fs.readFile(f.path)).toString('base64'), revised_prompt: prompt })));
    return { status: 200, json: { created: nowSeconds(), data } };
  }

  /** A multipart creation holds one of MAX_VIDEO_UPLOADS slots from before its body is read until its picture is on disk. */
  async function createVideo({ req }: Call): Promise<Reply> {
    const upload = isMultipart(req.headers['content-type']);
    if (upload && uploads >= MAX_VIDEO_UPLOADS) {
      throw new HttpError(429, `too many video uploads at once (${MAX_VIDEO_UPLOADS} at most); retry in a second`, 'rate_limit_exceeded', { 'retry-after': '1' });
    }
    if (upload) uploads++;
    try {
      return await startVideo(req);
    } finally {
      if (upload) uploads--;
    }
  }

  async function startVideo(req: Call['req']): Promise<Reply> {
    const { body, picture } = await videoRequest(req);
    const prompt = requiredString(body, 'prompt');
    const model = optionalString(body, 'model', 200) ?? 'svc-video';
    const seconds = optionalNumber(body, 'seconds', VIDEO_SECONDS.min, VIDEO_SECONDS.max) ?? VIDEO_DEFAULT.seconds;
    const size = parseSize(body.size, 'size', VIDEO_DEFAULT, true);
    const reference = picture ? await renderer.keepReference(picture.data) : undefined;
    const job: VideoJob = {
      id: `video_${randomUUID().replaceAll('-', '')}`, model, created_at: nowSeconds(), seconds,
      size: `${size.width}x${size.height}`, status: 'queued', file: null, error: null,
      reference: picture && reference ? { mime_type: picture.mimeType, size: picture.data.length, sha256: reference } : null,
    };
    remember(videos, job.id, job);
    const answer = presentVideo(job);
    // Rendered after the answer, as a provider would: the first poll may find it in progress.
    job.status = 'in_progress';
    const defect = faults.current.videoDefect;
    renderer.render({ kind: 'video', prompt, ...size, seconds, fps: VIDEO_DEFAULT.fps, ...(reference ? { reference } : {}), ...(defect ? { defect } : {}) }).then(
      (file) => Object.assign(job, { status: 'completed', file }),
      (err: Error) => Object.assign(job, { status: 'failed', error: `rendering failed: ${err.message}` }),
    );
    return { status: 200, json: answer };
  }

  function videoById(id: string): VideoJob {
    const job = videos.get(id);
    if (!job) throw new HttpError(404, `no video with id ${id}`);
    return job;
  }

  function videoContent({ params }: Call): Reply {
    const job = videoById(params.id);
    if (!job.file) throw new HttpError(409, `video ${job.id} is ${job.status}, not completed`);
    return fileReply(job.file);
  }

  async function speech({ req }: Call): Promise<Reply> {
    const body = await readJson(req);
    const text = requiredString(body, 'input', SPEECH_MAX_CHARS);
    optionalString(body, 'model', 200);
    const voice = optionalString(body, 'voice', 64) ?? 'alloy';
    optionalEnum(body, 'response_format', ['wav'] as const);
    return fileReply(await renderer.render({ kind: 'speech', text, voice }));
  }

  return [
    { method: 'GET', pattern: '/v1/models', handler: () => ({ status: 200, json: { object: 'list', data: MODELS.map((id) => ({ id, object: 'model', created: 0, owned_by: 'svc' })) } }) },
    { method: 'POST', pattern: '/v1/images/generations', generation: true, handler: images },
    { method: 'POST', pattern: '/v1/videos', generation: true, handler: createVideo },
    { method: 'GET', pattern: '/v1/videos/:id', handler: ({ params }) => ({ status: 200, json: presentVideo(videoById(params.id)) }) },
    { method: 'GET', pattern: '/v1/videos/:id/content', handler: videoContent },
    { method: 'POST', pattern: '/v1/audio/speech', generation: true, handler: speech },
    { method: 'POST', pattern: '/v1/audio/transcriptions', generation: true, handler: transcription },
    { method: 'POST', pattern: '/v1/chat/completions', generation: true, handler: (call) => chatCompletion(call, chatSeq) },
  ];
}
