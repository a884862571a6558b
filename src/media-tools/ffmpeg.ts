// Finding and running ffmpeg and ffprobe. The contract's order: SVC_FFMPEG_PATH / SVC_FFPROBE_PATH,
// then PATH, then the static binaries of the optional npm packages (@ffmpeg-installer/ffmpeg,
// @ffprobe-installer/ffprobe). Discovery touches the file system, so its answer is cached per
// distinct set of environment values; running never goes through a shell.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface Tool {
  path: string;
  source: 'SVC_FFMPEG_PATH' | 'SVC_FFPROBE_PATH' | 'PATH' | 'npm';
}

export interface MediaTools { ffmpeg: Tool | null; ffprobe: Tool | null }

export interface RunOptions {
  signal?: AbortSignal;
  /** Kills the process after this long (default two minutes). */
  timeoutMs?: number;
  /** Written to the process's stdin (the arguments should read `-i pipe:0`). */
  input?: Buffer;
  /**
   * Receives stdout chunk by chunk instead of collecting it (the result's stdout is then empty): for
   * outputs too large to hold, such as every decoded frame of a video. A throw stops the process
   * and rejects with that error.
   */
  onStdout?: (chunk: Buffer) => void;
}

export interface RunResult { stdout: Buffer; stderr: string }

type ToolName = 'ffmpeg' | 'ffprobe';

/** Why running a tool failed: missing, non-zero exit, timed out or aborted by the caller. */
export class MediaToolError extends Error {
  readonly tool: ToolName;
  readonly reason: 'missing' | 'failed' | 'timeout' | 'aborted';
  constructor(tool: ToolName, reason: MediaToolError['reason'], message: string) {
    super(message);
    this.name = 'MediaToolError';
    this.tool = tool;
    this.reason = reason;
  }
}

/** Output options that keep timestamps, encoder versions and metadata out of a file: the same input gives the same bytes. */
export const BITEXACT = ['-map_metadata', '-1', '-map_chapters', '-1', '-fflags', '+bitexact', '-flags:v', '+bitexact', '-flags:a', '+bitexact'];

const DEFAULT_TIMEOUT_MS = 120_000;
/** stderr kept for error messages: ffmpeg can be chatty, only the end explains a failure. */
const STDERR_KEEP_BYTES = 64 * 1024;
const STDERR_LINES_IN_ERROR = 6;

const NPM_PACKAGES: Record<ToolName, string> = {
  ffmpeg: '@ffmpeg-installer/ffmpeg',
  ffprobe: '@ffprobe-installer/ffprobe',
};
const ENV_NAMES = { ffmpeg: 'SVC_FFMPEG_PATH', ffprobe: 'SVC_FFPROBE_PATH' } as const;

const discovered = new Map<string, MediaTools>();

/** ffmpeg and ffprobe as this environment finds them (null = not found anywhere). */
export function findMediaTools(env: NodeJS.ProcessEnv = process.env): MediaTools {
  const key = [env.SVC_FFMPEG_PATH, env.SVC_FFPROBE_PATH, env.PATH].join('\0');
  let tools = discovered.get(key);
  if (!tools) {
    tools = Object.freeze({ ffmpeg: findTool('ffmpeg', env), ffprobe: findTool('ffprobe', env) });
    discovered.set(key, tools);
  }
  return tools;
}

function findTool(name: ToolName, env: NodeJS.ProcessEnv): Tool | null {
  // An explicit setting wins even when wrong: running it then fails naming the variable, which
  // says more than silently using another binary.
  const configured = env[ENV_NAMES[name]];
  if (configured) return { path: configured, source: ENV_NAMES[name] };
  const onPath = searchPath(name, env.PATH ?? '');
  if (onPath) return { path: onPath, source: 'PATH' };
  const shipped = npmBinary(name);
  return shipped ? { path: shipped, source: 'npm' } : null;
}

function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function searchPath(name: string, searchList: string): string | null {
  for (const dir of searchList.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/**
 * The binary of the optional npm package, or null when it is not installed (optional dependencies
 * may be skipped) or does not support this platform (the packages throw on require). npm does not
 * always keep the executable bit of a package's files, so it is restored here.
 */
function npmBinary(name: ToolName): string | null {
  let file: string;
  try {
    const required = createRequire(import.meta.url)(NPM_PACKAGES[name]) as { path?: unknown };
    if (typeof required.path !== 'string') return null;
    file = required.path;
  } catch {
    return null;
  }
  if (isExecutableFile(file)) return file;
  try {
    fs.chmodSync(file, fs.statSync(file).mode | 0o100);
  } catch {
    return null;
  }
  return isExecutableFile(file) ? file : null;
}

function requireTool(name: ToolName): Tool {
  const tool = findMediaTools()[name];
  if (!tool) {
    throw new MediaToolError(name, 'missing',
      `${name} not found: set ${ENV_NAMES[name]}, put ${name} on PATH, or install the optional dependency ${NPM_PACKAGES[name]}`);
  }
  return tool;
}

/** Runs ffmpeg with `args` (no shell); resolves with its stdout once it exits 0. */
export function runFfmpeg(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const lead = opts.input ? ['-hide_banner'] : ['-hide_banner', '-nostdin'];
  return run('ffmpeg', [...lead, ...args], opts);
}

export interface ProbeResult<T> extends RunResult {
  /** stdout parsed, when the arguments asked for JSON (`-print_format json` / `-of json`). */
  json: T | null;
}

/** Runs ffprobe with `args`; parses stdout when JSON output was requested. */
export async function runFfprobe<T = unknown>(args: string[], opts: RunOptions = {}): Promise<ProbeResult<T>> {
  const result = await run('ffprobe', ['-hide_banner', ...args], opts);
  return { ...result, json: wantsJson(args) ? parseProbeJson<T>(result.stdout) : null };
}

function wantsJson(args: string[]): boolean {
  return args.some((a, i) => (a === '-print_format' || a === '-of' || a === '-output_format') && /^json\b/.test(args[i + 1] ?? ''));
}

function parseProbeJson<T>(stdout: Buffer): T {
  try {
    return JSON.parse(stdout.toString('utf8')) as T;
  } catch {
    throw new MediaToolError('ffprobe', 'failed', 'ffprobe printed output that is not JSON');
  }
}

/**
 * The only demuxers ffmpeg/ffprobe may use on a stored file: the containers the service stores (MP4 and
 * QuickTime, Matroska and WebM, WAV, MP3, Ogg, FLAC, AAC) and still images. A tenant's file is never
 * opened as a playlist or a list of other sources (HLS, DASH, concat...): read from a signed URL, such a
 * file could make ffmpeg fetch any address it names (a request on the tenant's behalf outside the
 * egress policy).
 */
export const MEDIA_DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,wav,mp3,ogg,flac,aac,image2,png_pipe,jpeg_pipe,webp_pipe,gif,gif_pipe';

/**
 * The arguments opening one stored input (put `-i` in front for ffmpeg; ffprobe takes them as they
 * are): the demuxer allow-list, then an http(s) URL as it is (a signed URL of the object store), or
 * anything else as a local path through the file protocol (so a name with a colon is never taken for
 * a protocol).
 */
export function inputArgs(input: string, opts: { ffprobe?: boolean } = {}): string[] {
  return ['-format_whitelist', MEDIA_DEMUXERS, ...(opts.ffprobe ? [] : ['-i']), isUrl(input) ? input : `file:${input}`];
}

/** Whether an input is an http(s) URL (else a local path). */
export const isUrl = (input: string): boolean => /^https?:\/\//i.test(input);

/** A URL (its query may carry a signature) never reaches an error message. */
export const withoutUrls = (text: string): string => text.replace(/https?:\/\/[^\s'"]*/gi, '<url>');

function lastLines(stderr: string): string {
  return withoutUrls(stderr.trim().split('\n').slice(-STDERR_LINES_IN_ERROR).join(' | '));
}

function run(name: ToolName, args: string[], opts: RunOptions): Promise<RunResult> {
  const tool = requireTool(name);
  const { signal, input } = opts;
  if (signal?.aborted) return Promise.reject(new MediaToolError(name, 'aborted', `${name} aborted before it started`));
  return new Promise((resolve, reject) => {
    const child = spawn(tool.path, args, { stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'], windowsHide: true });
    const stdout: Buffer[] = [];
    let stderr = '';
    let stopped: Error | null = null;
    const stop = (err: Error) => {
      stopped ??= err;
      child.kill('SIGKILL');
    };
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => stop(new MediaToolError(name, 'timeout', `${name} timed out after ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => stop(new MediaToolError(name, 'aborted', `${name} aborted`));
    signal?.addEventListener('abort', onAbort, { once: true });
    let done = false;
    // A spawn failure emits 'error' and then 'close': only the first answer counts.
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve({ stdout: Buffer.concat(stdout), stderr });
    };
    const { onStdout } = opts;
    child.stdout!.on('data', onStdout
      ? (c: Buffer) => {
        if (stopped) return;
        try {
          onStdout(c);
        } catch (err) {
          stop(err as Error);
        }
      }
      : (c: Buffer) => stdout.push(c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      stderr = (stderr + c).slice(-STDERR_KEEP_BYTES);
    });
    child.on('error', (err) => finish(new MediaToolError(name, 'missing',
      `${name} at ${tool.path} (from ${tool.source}) could not be started: ${err.message}`)));
    child.on('close', (code, sig) => {
      if (stopped) return finish(stopped);
      if (code === 0) return finish(null);
      finish(new MediaToolError(name, 'failed', `${name} exited with ${code ?? sig}: ${lastLines(stderr) || 'no message'}`));
    });
    if (input && child.stdin) {
      // EPIPE when the tool exits before reading everything is reported through 'close' instead.
      child.stdin.on('error', () => {});
      child.stdin.end(input);
    }
  });
}

const VERSION_TIMEOUT_MS = 10_000;
const versions = new Map<string, Promise<string | null>>();

/**
 * The version token of `tool` (the word after "version" on the first line of `<tool> -version`,
 * e.g. "6.1.1" or "N-47683-g0e8eb07980-static"), or null when it cannot be started, fails, times
 * out or prints no version line. Cached per path; a failure is not cached, so a fixed binary is seen
 * at the next call.
 */
export function toolVersion(tool: Tool): Promise<string | null> {
  let pending = versions.get(tool.path);
  if (!pending) {
    pending = new Promise<string | null>((resolve) => {
      let out = '';
      let child: Awaited<ReturnType<typeof spawn>>;
      try {
        child = spawn(tool.path, ['-version'], { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true, timeout: VERSION_TIMEOUT_MS });
      } catch {
        resolve(null);
        return;
      }
      child.stdout!.setEncoding('utf8').on('data', (c: string) => { if (out.length < 4096) out += c; });
      child.on('error', () => resolve(null));
      child.on('close', (code) => {
        const m = /^\S+ version (\S+)/.exec(out.split('\n', 1)[0].trim());
        resolve(code === 0 && m ? m[1] : null);
      });
    });
    versions.set(tool.path, pending);
    void pending.then((v) => { if (v === null && versions.get(tool.path) === pending) versions.delete(tool.path); });
  }
  return pending;
}
