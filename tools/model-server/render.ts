// Rendering with ffmpeg behind a content-addressed cache: a file's name is the SHA-256 of what
// determines its bytes (spec, font, renderer version), so a repeated request costs one Map lookup
// instead of a process spawn, concurrent identical requests share one render, and a cache
// directory handed over by the caller stays valid across restarts. Files are written under a
// temporary name and renamed, so a name that exists is always complete. A video's reference picture
// is kept under references/<its SHA-256> (whatever the client called it), and the spec names it by
// that hash: the same picture and prompt give the same video name, another picture another one.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { runFfmpeg } from '../../src/media-tools/ffmpeg.ts';
import { captionOf, FILE_TYPES, sceneArgs, wrapCaption, type RenderSpec } from './scenes.ts';

/**
 * Bump when a scene changes its look, so that caches hold no stale files under the same name (a new
 * spec field, like a video's reference, changes the names by itself; specs without it keep theirs).
 */
const RENDER_VERSION = 2;
const RENDER_TIMEOUT_MS = 60_000;
const FILE_NAME = /^[0-9a-f]{64}\.(png|mp4|wav)$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const REFERENCES = 'references';
const MIME_BY_EXT: Record<string, string> = Object.fromEntries(Object.values(FILE_TYPES).map((t) => [t.ext, t.mimeType]));

export interface Rendered { name: string; path: string; mimeType: string; size: number }

export interface Renderer {
  readonly dir: string;
  /** The font drawn with, or null (then pictures carry the prompt only in their iTXt chunk). */
  readonly font: string | null;
  render(spec: RenderSpec): Promise<Rendered>;
  /** Stores a video's reference picture under its SHA-256 and answers that hash (for VideoSpec.reference). */
  keepReference(picture: Buffer): Promise<string>;
  /** A rendered file by name; null when the name is not in the cache. */
  file(name: string): Promise<Rendered | null>;
  /** Stops renders in flight, waits for reference pictures being written, and removes the cache directory (references/ too) when it was a temporary one. */
  close(): Promise<void>;
}

const FONT_CANDIDATES = [
  '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
  '/usr/share/fonts/TTF/DejaVuSans.ttf',
  '/usr/share/fonts/dejavu/DejaVuSans.ttf',
  '/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf',
];
const FONT_DIRS = ['/usr/share/fonts', '/usr/local/share/fonts'];

/** DejaVu Sans where distributions put it, else the first .ttf (by sorted path) under the font folders. */
export async function findFont(): Promise<string | null> {
  for (const file of FONT_CANDIDATES) {
    if (await fs.stat(file).then((s) => s.isFile(), () => false)) return file;
  }
  for (const dir of FONT_DIRS) {
    const entries = await fs.readdir(dir, { recursive: true }).catch(() => [] as string[]);
    const ttf = entries.filter((e) => e.toLowerCase().endsWith('.ttf')).sort()[0];
    if (ttf) return path.join(dir, ttf);
  }
  return null;
}

/** `png` with an uncompressed iTXt chunk (UTF-8 text) inserted right after IHDR. */
export function withTextChunk(png: Buffer, keyword: string, text: string): Buffer {
  const ihdrEnd = 8 + 4 + 4 + png.readUInt32BE(8) + 4;
  // keyword NUL, compression flag 0, method 0, empty language tag NUL, empty translated keyword NUL
  const data = Buffer.concat([Buffer.from(keyword, 'latin1'), Buffer.from([0, 0, 0, 0, 0]), Buffer.from(text, 'utf8')]);
  const typeAndData = Buffer.concat([Buffer.from('iTXt', 'latin1'), data]);
  const chunk = Buffer.alloc(4 + typeAndData.length + 4);
  chunk.writeUInt32BE(data.length, 0);
  typeAndData.copy(chunk, 4);
  chunk.writeUInt32BE(zlib.crc32(typeAndData), 4 + typeAndData.length);
  return Buffer.concat([png.subarray(0, ihdrEnd), chunk, png.subarray(ihdrEnd)]);
}

/** At most `limit` tasks at once: a burst of image requests must not fork a process per image. */
function limiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (task) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

function cacheName(spec: RenderSpec, font: string | null): string {
  const canonical = JSON.stringify([RENDER_VERSION, font, spec], Object.keys(spec).sort());
  return `${createHash('sha256').update(canonical).digest('hex')}.${FILE_TYPES[spec.kind].ext}`;
}

async function describe(dir: string, name: string): Promise<Rendered | null> {
  const file = path.join(dir, name);
  const stat = await fs.stat(file).catch(() => null);
  return stat?.isFile() ? { name, path: file, mimeType: MIME_BY_EXT[path.extname(name).slice(1)], size: stat.size } : null;
}

export async function createRenderer(opts: { cacheDir?: string } = {}): Promise<Renderer> {
  const owned = !opts.cacheDir;
  const dir = opts.cacheDir ?? await fs.mkdtemp(path.join(os.tmpdir(), 'svc-model-server-'));
  if (!owned) await fs.mkdir(dir, { recursive: true });
  const font = await findFont();
  const stop = new AbortController();
  const renders = new Map<string, Promise<Rendered>>();
  /** Reference pictures being written: close() waits for them, so none lands after the removal. */
  const keeping = new Set<Promise<unknown>>();
  let closed = false;
  const throttle = limiter(Math.max(2, os.availableParallelism()));
  let partSeq = 0;

  const partOf = (file: string) => `${file}.${process.pid}.${++partSeq}.part`;

  /** The file of a kept reference picture (a hash the renderer wrote, never a client's name). */
  async function referenceFile(sha: string): Promise<string> {
    const file = path.join(dir, REFERENCES, sha);
    if (!SHA256_HEX.test(sha) || !(await fs.stat(file).then((st) => st.isFile(), () => false))) throw new Error(`no reference picture ${sha.slice(0, 64)}`);
    return file;
  }

  async function produce(spec: RenderSpec, name: string): Promise<Rendered> {
    const cached = await describe(dir, name);
    if (cached) return cached;
    const picture = spec.kind === 'video' && spec.reference ? await referenceFile(spec.reference) : null;
    const part = partOf(path.join(dir, name));
    let textFile: string | null = null;
    try {
      // drawtext reads the caption from a file: no quoting of arbitrary prompt text in the graph.
      if (spec.kind !== 'speech' && font && captionOf(spec).trim()) {
        textFile = `${part}.txt`;
        await fs.writeFile(textFile, wrapCaption(captionOf(spec), spec));
      }
      await throttle(() => runFfmpeg(sceneArgs(spec, font, textFile, part, picture), { signal: stop.signal, timeoutMs: RENDER_TIMEOUT_MS }));
      if (spec.kind === 'image') await fs.writeFile(part, withTextChunk(await fs.readFile(part), 'Description', spec.prompt));
      await fs.rename(part, path.join(dir, name));
    } finally {
      await Promise.all([part, textFile].filter((f): f is string => !!f).map((f) => fs.rm(f, { force: true })));
    }
    return (await describe(dir, name))!;
  }

  return {
    dir,
    font,
    render(spec) {
      const name = cacheName(spec, font);
      let pending = renders.get(name);
      if (!pending) {
        pending = produce(spec, name);
        renders.set(name, pending);
        pending.catch(() => renders.delete(name));
      }
      return pending;
    },
    async keepReference(picture) {
      if (closed) throw new Error('the renderer is closed');
      const sha = createHash('sha256').update(picture).digest('hex');
      const file = path.join(dir, REFERENCES, sha);
      const write = (async () => {
        if (await fs.stat(file).then((st) => st.size === picture.length, () => false)) return;
        await fs.mkdir(path.dirname(file), { recursive: true });
        const part = partOf(file);
        try {
          await fs.writeFile(part, picture);
          await fs.rename(part, file);
        } finally {
          await fs.rm(part, { force: true });
        }
      })();
      keeping.add(write);
      try {
        await write;
      } finally {
        keeping.delete(write);
      }
      return sha;
    },
    async file(name) {
      return FILE_NAME.test(name) ? describe(dir, name) : null;
    },
    async close() {
      closed = true;
      stop.abort();
      await Promise.allSettled([...renders.values(), ...keeping]);
      if (owned) await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
