// The http-json contract (svc's own protocol, see src/generation/connectors/protocols/httpjson.ts): one POST
// with {contract, execution}, answered synchronously with the outputs. Files are rendered before
// the answer and referenced by absolute URL; text kinds answer inline without touching a file.
import { imagePlan, type FaultControl } from './faults.ts';
import { fileUrl } from './files.ts';
import { invalid, readJson, type Call, type Reply, type Route } from './http.ts';
import { isRecord, optionalNumber, optionalString, parseSize, requiredRecord, requiredString, type Body } from './input.ts';
import type { Renderer } from './render.ts';
import { IMAGE_DEFAULT, VIDEO_DEFAULT, VIDEO_SECONDS, type Size } from './scenes.ts';
import { chatReply, transcript } from './text.ts';

interface Output { role: 'image' | 'video' | 'audio' | 'text'; mimeType: string; url?: string; text?: string }

interface Job { contract: Body; parameters: Body; base: string }

const MODEL_BY_KIND: Record<string, string> = {
  image: 'svc-image', video: 'svc-video', tts: 'svc-tts', asr: 'svc-asr', chat: 'svc-chat', prompt: 'svc-chat',
};

/** parameters.size "WxH", else parameters.width and .height, else the fallback. */
function sizeOf(parameters: Body, fallback: Size, even = false): Size {
  const { width, height } = parameters;
  const size = parameters.size ?? (width !== undefined || height !== undefined ? `${String(width)}x${String(height)}` : undefined);
  return parseSize(size, 'contract.parameters.size', fallback, even);
}

function textOutput(text: string): Output[] {
  return [{ role: 'text', mimeType: 'text/plain', text }];
}

/** asr: the first input's name, size and SHA-256 as the contract describes them. */
function transcribeInput(contract: Body): Output[] {
  const first: unknown = Array.isArray(contract.inputs) ? contract.inputs[0] : undefined;
  if (!isRecord(first)) throw invalid('"contract.inputs" must hold the file to transcribe');
  const fileName = requiredString(first, 'fileName', 1024);
  const fileSize = optionalNumber(first, 'fileSize', 0, Number.MAX_SAFE_INTEGER) ?? 0;
  const sha = optionalString(first, 'contentSha256', 64) ?? '';
  return textOutput(transcript(fileName, fileSize, sha));
}

export function httpJsonRoutes(renderer: Renderer, faults: FaultControl): Route[] {
  const kinds: Record<string, (job: Job) => Output[] | Promise<Output[]>> = {
    async image({ contract, parameters, base }) {
      const prompt = requiredString(contract, 'prompt');
      const specs = imagePlan(faults.current, prompt, sizeOf(parameters, IMAGE_DEFAULT), 1);
      const files = await Promise.all(specs.map((spec) => renderer.render(spec)));
      return files.map((f) => ({ role: 'image', mimeType: f.mimeType, url: fileUrl(base, f) }));
    },
    async video({ contract, parameters, base }) {
      const prompt = requiredString(contract, 'prompt');
      const seconds = optionalNumber(parameters, 'seconds', VIDEO_SECONDS.min, VIDEO_SECONDS.max) ?? optionalNumber(parameters, 'duration', VIDEO_SECONDS.min, VIDEO_SECONDS.max) ?? VIDEO_DEFAULT.seconds;
      const size = sizeOf(parameters, VIDEO_DEFAULT, true);
      const file = await renderer.render({ kind: 'video', prompt, ...size, seconds, fps: VIDEO_DEFAULT.fps });
      return [{ role: 'video', mimeType: file.mimeType, url: fileUrl(base, file) }];
    },
    async tts({ contract, parameters, base }) {
      const text = optionalString(parameters, 'text', 4096) ?? requiredString(contract, 'prompt', 4096);
      const voice = optionalString(parameters, 'voice', 64) ?? 'alloy';
      const file = await renderer.render({ kind: 'speech', text, voice });
      return [{ role: 'audio', mimeType: file.mimeType, url: fileUrl(base, file) }];
    },
    chat: ({ contract }) => textOutput(chatReply(requiredString(contract, 'prompt'))),
    prompt: ({ contract }) => textOutput(chatReply(requiredString(contract, 'prompt'))),
    asr: ({ contract }) => transcribeInput(contract),
  };

  async function generate({ req, base }: Call): Promise<Reply> {
    const body = await readJson(req);
    const contract = requiredRecord(body, 'contract');
    const execution = requiredRecord(body, 'execution');
    const kind = requiredString(execution, 'kind', 64);
    const render = Object.hasOwn(kinds, kind) ? kinds[kind] : null;
    if (!render) throw invalid(`unknown kind "${kind}"; this server does ${Object.keys(kinds).join(', ')}`);
    const parameters = contract.parameters === undefined || contract.parameters === null ? {} : requiredRecord(contract, 'parameters');
    const model = optionalString(execution, 'model', 200) ?? MODEL_BY_KIND[kind];
    const outputs = await render({ contract, parameters, base });
    const text = outputs.length === 1 && outputs[0].role === 'text' ? { text: outputs[0].text } : {};
    return { status: 200, json: { status: 'completed', kind, outputs, model, ...text } };
  }

  return [
    { method: 'POST', pattern: '/generate', generation: true, handler: generate },
    { method: 'POST', pattern: '/', generation: true, handler: generate },
  ];
}
