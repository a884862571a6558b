// http-json: the service's own simple protocol. One POST per call, synchronous answer.
//
// ## http-json request and response
//
// Request: `POST <endpoint>` (or `<endpoint><protocol.routes[kind]>` when a route is configured for
// the kind; a route that is an absolute URL is used as it is), headers `content-type:
// application/json` and, when the connector has `authEnv`, `authorization: Bearer <credential>`.
// Body:
//
//     {
//       "contract": {                       // the production contract
//         "organization": { "id", "name" },
//         "project": { "id", "name" },
//         "episode": { "id", "title", "number" } | null,
//         "shot": { "id", "code", "title", "description" } | null,
//         "prompt": "...",
//         "negativePrompt": "..." | null,
//         "bible": [ { "id", "kind", "name", "revision" } ],
//         "inputs": [ { "assetId", "versionId", "fileName", "mimeType", "fileSize", "contentSha256" }   // asset versions
//                   | { "artifactId", "jobId", "fileName", "mimeType", "fileSize", "contentSha256" } ], // the dependency's media (useDependencyOutputs)
//         "parameters": { ... }             // free-form: size, duration, voice, seed, ...
//       },
//       "execution": {
//         "jobId": "job_...",               // stable across attempts (use it to deduplicate)
//         "attempt": 1,
//         "kind": "image" | "video" | "tts" | "asr" | "chat" | "prompt" | ...,
//         "model": "..." | null,            // the job's model, else protocol.models[kind]
//         "deadline": "2025-01-01T00:00:00.000Z"  // the call is abandoned after this time
//       }
//     }
//
// Response (2xx, JSON):
//
//     {
//       "status": "completed",
//       "outputs": [
//         { "role": "image" | "video" | "audio" | "text",
//           "mimeType": "image/png",
//           "url": "https://... or /relative/to/the/endpoint/origin",   // one of url,
//           "base64": "...",                                             // base64 or
//           "text": "..." }                                              // text
//       ],
//       "text": "..."?,                     // optional text result (chat, prompt, asr)
//       "model": "..."?                     // optional: the model that answered
//     }
//
// or `{ "status": "failed", "error": { "message": "...", "retryable": false? } }` (the job is
// retried unless retryable is false). Files are fetched from `url` (the credential is sent only to
// the endpoint's own origin) or decoded from `base64`, and stored as outputs/<jobId>/<role>-<n>.<ext>.
// Text outputs are returned in the job output (`text`), not stored as files. For an image job the
// outputs must hold exactly one output of role "image", otherwise the job fails
// (image_count_mismatch) before anything is downloaded; a collage, split screen or contact sheet
// fails it too (image_composite_detected). Non-2xx: 5xx, 408 and 429 are retried, other 4xx fail
// the job; the message is taken from `error.message`, `message` or `error`.
import { ConnectorError } from './types.ts';
import type { CallRequest, CallResult, ConnectorSpec, Execution, OutputFile, ProductionContract } from './types.ts';
import { checkImageCount, rejectComposite, storeAnswered } from './outputs.ts';
import type { OutputRole } from './outputs.ts';
import { joinUrl, parseEndpoint } from './urls.ts';
import { badResponse } from './errors.ts';
import { isObject, modelFor, fileJsonLimit, postPrepared, type Prepared } from './prepared.ts';

export const HEALTH_ROUTE = '/health';

/** The route of a kind: the configured one, else the endpoint's own path. */
export function routeFor(connector: ConnectorSpec, kind: string): string {
  const configured = connector.protocol?.routes?.[kind];
  if (configured) return configured;
  try {
    return parseEndpoint(connector.endpoint).pathname;
  } catch {
    return '/';
  }
}

export function build(connector: ConnectorSpec, contract: ProductionContract, execution: Execution): Prepared {
  const configured = connector.protocol?.routes?.[execution.kind];
  const route = routeFor(connector, execution.kind);
  if (!configured) parseEndpoint(connector.endpoint); // the endpoint itself is the target: refuse one that is not an http(s) URL
  const url = configured ? joinUrl(connector.endpoint, configured) : connector.endpoint;
  const model = modelFor(connector, execution.kind, execution.model);
  const exec = model === execution.model ? execution : { ...execution, model };
  return { url, route, model, contentType: 'application/json', body: { contract, execution: exec } };
}

const ROLES = new Set<OutputRole>(['image', 'video', 'audio', 'text']);

interface Out {
  role: OutputRole;
  mimeType: string | null;
  url: string | null;
  base64: string | null;
  text: string | null;
}

function parseOutputs(json: unknown): { outputs: Out[]; text: string | null; model: string | null } {
  if (!isObject(json)) throw badResponse('the http-json response is not a JSON object');
  if (json.status === 'failed') {
    const err = json.error;
    const message = isObject(err) && typeof err.message === 'string' ? err.message : typeof err === 'string' ? err : 'no reason given';
    const retryable = !(isObject(err) && err.retryable === false);
    throw new ConnectorError('connector_job_failed', `the model service reports the generation failed: ${message.slice(0, 200)}`, retryable);
  }
  if (json.status !== 'completed') throw badResponse(`the http-json response status is ${JSON.stringify(json.status ?? null).slice(0, 40)}, not "completed"`);
  const raw = json.outputs ?? [];
  if (!Array.isArray(raw)) throw badResponse('the http-json response outputs is not an array');
  const outputs: Out[] = raw.map((o, i) => {
    if (!isObject(o) || typeof o.role !== 'string' || !ROLES.has(o.role as OutputRole)) {
      throw badResponse(`output ${i + 1} has no valid role (image, video, audio, text)`);
    }
    const url = typeof o.url === 'string' && o.url ? o.url : null;
    const base64 = typeof o.base64 === 'string' && o.base64 ? o.base64 : null;
    const text = typeof o.text === 'string' ? o.text : null;
    if (url === null && base64 === null && text === null) throw badResponse(`output ${i + 1} has none of url, base64, text`);
    return { role: o.role as OutputRole, mimeType: typeof o.mimeType === 'string' ? o.mimeType : null, url, base64, text };
  });
  return {
    outputs,
    text: typeof json.text === 'string' ? json.text : null,
    model: typeof json.model === 'string' ? json.model : null,
  };
}

export async function call(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult> {
  const json = await postPrepared(req, prep, secret, fileJsonLimit(req.maxOutputBytes));
  const { outputs, text, model } = parseOutputs(json);
  const isImage = req.execution.kind === 'image';
  if (isImage) checkImageCount(outputs.filter((o) => o.role === 'image').length);

  const files: OutputFile[] = [];
  const texts: string[] = [];
  const counters: Record<OutputRole, number> = { image: 0, video: 0, audio: 0, text: 0 };
  for (const o of outputs) {
    if (o.url === null && o.base64 === null) {
      texts.push(o.text!);
      continue;
    }
    const index = ++counters[o.role];
    const file = await storeAnswered(req, secret, { role: o.role, index, url: o.url, base64: o.base64, declaredMime: o.mimeType });
    if (isImage && o.role === 'image') await rejectComposite(req.storage, file, req.signal);
    files.push(file);
  }
  const output: Record<string, unknown> = {};
  const allText = text ?? (texts.length ? texts.join('\n') : null);
  if (allText !== null) output.text = allText;
  output.model = model ?? prep.model;
  return { output, files };
}
