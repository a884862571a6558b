// Readiness: the runtime and providers this process actually uses (Node, the business database —
// node:sqlite by default, PostgreSQL only when SVC_DATABASE says so —, the storage
// driver — local by default, s3 only when SVC_STORAGE_DRIVER says so — and ffmpeg/ffprobe) against the
// target providers of a larger deployment (PostgreSQL, Redis, S3-compatible storage). A target is
// "configured" when its PLATFORM_* variable is set (non-empty); its value is never shown, and a
// PLATFORM_* variable never activates anything: a target is "active" when the service's own setting
// uses that kind of provider (postgresql: SVC_DATABASE=postgres; s3: SVC_STORAGE_DRIVER=s3; redis: never).
import fs from 'node:fs';
import type { Ctx } from '../directory/context.ts';
import * as o from '../kernel/view.ts';
import { requireSystemAdmin } from '../kernel/errors.ts';
import { databaseLabel } from '../db/open.ts';
import { findMediaTools, toolVersion, type Tool } from '../media-tools/ffmpeg.ts';

/** The target providers and the variable that marks each configured. */
export const PLATFORM_TARGETS = {
  postgresql: 'PLATFORM_POSTGRES_URL',
  redis: 'PLATFORM_REDIS_URL',
  s3: 'PLATFORM_S3_ENDPOINT',
} as const;

export type TargetName = keyof typeof PLATFORM_TARGETS;

const TOOL_SOURCES = ['SVC_FFMPEG_PATH', 'SVC_FFPROBE_PATH', 'PATH', 'npm'] as const satisfies readonly Tool['source'][];

const MediaToolView = o.nullable(o.object({
  path: o.text(), source: o.oneOf(TOOL_SOURCES, 'where the tool was found'), version: o.nullable(o.text({ description: 'null: it did not report one' })),
}, 'null: not found'));
export type MediaToolReport = NonNullable<o.Out<typeof MediaToolView>>;

const TargetView = o.object({
  configured: o.bool('its PLATFORM_* variable is set (the value is never shown)'),
  active: o.bool('this kind of provider is in use, by the service\'s own setting (postgresql: SVC_DATABASE=postgres; s3: SVC_STORAGE_DRIVER=s3; redis: never); a PLATFORM_* variable never activates anything'),
  env: o.text(),
});

export const ReadinessView = o.named('Readiness', o.object({
  status: o.oneOf(['ready', 'degraded']),
  problems: o.array(o.text(), 'what makes it degraded'),
  checkedAt: o.time(),
  runtime: o.object({ name: o.constant('node'), version: o.text(), platform: o.text(), arch: o.text() }),
  database: o.anyOf([
    o.object({ provider: o.constant('node:sqlite'), sqliteVersion: o.text(), path: o.text() }, 'the embedded default'),
    o.object({
      provider: o.constant('postgresql'), serverVersion: o.text(),
      path: o.text({ description: 'postgres://host:port/database (never the user or password)' }),
    }, 'SVC_DATABASE=postgres'),
  ]),
  storage: o.object({
    provider: o.oneOf(['local', 's3'], 'the active storage driver (SVC_STORAGE_DRIVER)'),
    path: o.text({ description: 'where the objects are: the storage folder (local), or s3://bucket/prefix at its endpoint (never a credential)' }),
    writable: o.bool('the local storage folder (on s3: the working folder of tmp/ and cache/) is a writable directory'),
    workingDir: o.optional(o.text({ description: 'only on s3: SVC_STORAGE_DIR, the local working folder (ffmpeg scratch files, staged copies)' })),
  }),
  media: o.object({ ffmpeg: MediaToolView, ffprobe: MediaToolView }),
  targets: o.object({ postgresql: TargetView, redis: TargetView, s3: TargetView } satisfies Record<TargetName, unknown>, 'target providers of a larger deployment'),
}));
export type Readiness = o.Out<typeof ReadinessView>;

const INSTALL_HINT = {
  ffmpeg: 'set SVC_FFMPEG_PATH, put ffmpeg on PATH or install the optional dependency @ffmpeg-installer/ffmpeg',
  ffprobe: 'set SVC_FFPROBE_PATH, put ffprobe on PATH or install the optional dependency @ffprobe-installer/ffprobe',
} as const;

async function mediaTool(name: 'ffmpeg' | 'ffprobe', tool: Tool | null): Promise<{ report: MediaToolReport | null; problem: string | null }> {
  if (!tool) return { report: null, problem: `${name} not found: ${INSTALL_HINT[name]}` };
  const version = await toolVersion(tool);
  return {
    report: { path: tool.path, source: tool.source, version },
    problem: version === null ? `${name} at ${tool.path} (from ${tool.source}) did not report a version` : null,
  };
}

function writable(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** Whether the service's own settings use each kind of target provider. */
const ACTIVE: Record<TargetName, (config: Ctx['config']) => boolean> = {
  postgresql: (config) => config.database === 'postgres',
  redis: () => false,
  s3: (config) => config.storageDriver === 's3',
};

async function databaseReport(ctx: Ctx): Promise<Readiness['database']> {
  if (ctx.db.engine === 'sqlite') {
    return { provider: 'node:sqlite', sqliteVersion: (await ctx.db.get<{ v: string }>('SELECT sqlite_version() AS v'))!.v, path: ctx.config.dbPath };
  }
  return {
    provider: 'postgresql',
    serverVersion: (await ctx.db.get<{ v: string }>("SELECT current_setting('server_version') AS v"))!.v,
    path: databaseLabel(ctx.config),
  };
}

/** `env` is where ffmpeg discovery and the PLATFORM_* variables are read (process.env in the service). */
export async function readiness(ctx: Ctx, env: NodeJS.ProcessEnv = process.env): Promise<Readiness> {
  requireSystemAdmin(ctx);
  const { config } = ctx;
  const problems: string[] = [];
  const storageWritable = writable(config.storageDir);
  const local = ctx.storage.driver === 'local';
  if (!storageWritable) problems.push(`${local ? 'storage root' : 'storage working folder'} ${config.storageDir} is missing or not writable`);
  const tools = findMediaTools(env);
  const [ffmpeg, ffprobe] = await Promise.all([mediaTool('ffmpeg', tools.ffmpeg), mediaTool('ffprobe', tools.ffprobe)]);
  for (const p of [ffmpeg.problem, ffprobe.problem]) if (p) problems.push(p);
  const targets = Object.fromEntries(Object.entries(PLATFORM_TARGETS).map(([name, variable]) =>
    [name, { configured: (env[variable] ?? '') !== '', active: ACTIVE[name as TargetName](config), env: variable }])) as Readiness['targets'];
  return {
    status: problems.length ? 'degraded' : 'ready',
    problems,
    checkedAt: ctx.now().toISOString(),
    runtime: { name: 'node', version: process.versions.node, platform: process.platform, arch: process.arch },
    database: await databaseReport(ctx),
    storage: local
      ? { provider: 'local', path: config.storageDir, writable: storageWritable }
      : { provider: ctx.storage.driver, path: ctx.storage.location, writable: storageWritable, workingDir: config.storageDir },
    media: { ffmpeg: ffmpeg.report, ffprobe: ffprobe.report },
    targets,
  };
}
