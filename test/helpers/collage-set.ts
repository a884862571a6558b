// The labelled image set of the composite detector, built with ffmpeg into a directory: single
// pictures (gradients, noise, text, shapes, ffmpeg's test sources, the model server's images and
// the first frames of its videos, and photographs from Debian's desktop background packages when
// installed) and composites made of them (hstack, vstack, xstack, tile: 2x1, 1x2, 2x2, 3x3, with and
// without gutters, sometimes rescaled to a common output size; also contact sheets of consecutive
// frames of one video). The label is what an entry was built as, never what a detector says.
// Parameters come from a seeded generator, so a set is the same on every run (given the same font
// and photographs). The test builds the 'test' set (about fifty images), the bench the 'full' one
// (over four hundred).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';
import { findFont } from '../../tools/model-server/render.ts';
import { filterValue } from '../../tools/model-server/scenes.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';

export interface SetEntry {
  file: string;
  label: 'single' | 'composite';
  /** Singles: how the picture was made. Composites: where the panels came from (mixed, same:<family>, sheet:<source>, modelserver). */
  family: string;
  /** Composites: columns x rows. */
  layout?: string;
  /** How it was built (for reports): size, filter, gutter. */
  detail: string;
}

export type SetSize = 'test' | 'full';

const PHOTO_DIRS = ['/usr/share/backgrounds', '/usr/share/images/desktop-base', '/usr/share/wallpapers', '/usr/share/desktop-base'];
const SIZES: ReadonlyArray<readonly [number, number]> = [
  [576, 1024], [1024, 576], [512, 512], [640, 480], [480, 640], [768, 768], [320, 180], [720, 1280], [400, 300],
];
const WORDS = 'night train platform villain storyboard episode harbour lantern quiet signal river morning ticket window shadow mirror'.split(' ');

/** A small deterministic generator (mulberry32). */
function rng(seed: number): { int(n: number): number; pick<T>(a: readonly T[]): T; real(lo: number, hi: number): number } {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return { int: (n) => Math.floor(next() * n), pick: (a) => a[Math.floor(next() * a.length)], real: (lo, hi) => lo + next() * (hi - lo) };
}
type Rng = Awaited<ReturnType<typeof rng>>;

const hex = (r: Rng) => '0x' + Array.from({ length: 3 }, () => r.int(256).toString(16).padStart(2, '0')).join('');
const rgbOf = (c: string) => [1, 3, 5].map((i) => parseInt(c.slice(1 + i, 3 + i), 16));

/** A single picture: ffmpeg input arguments and an optional filter chain (-vf). */
interface Recipe { family: string; detail: string; input: string[]; filter?: string }

function lavfi(family: string, detail: string, source: string, filter?: string): Recipe {
  return { family, detail, input: ['-f', 'lavfi', '-i', source], filter };
}

/** geq over RGB planes: one expression per channel. */
const geq = (r: string, g: string, b: string) => `format=gbrp,geq=r='${r}':g='${g}':b='${b}'`;

function gradient(r: Rng, i: number, w: number, h: number): Recipe {
  const [a, b] = [rgbOf(hex(r)), rgbOf(hex(r))];
  const kind = ['horizontal', 'vertical', 'diagonal', 'radial', 'three-stop'][i % 5];
  const t = {
    horizontal: 'X/W', vertical: 'Y/H', diagonal: `(X*${r.real(0.2, 1).toFixed(2)}+Y)/(W*${r.real(0.2, 1).toFixed(2)}+H)`,
    radial: `min(1,hypot(X-W*${r.real(0.2, 0.8).toFixed(2)},Y-H*${r.real(0.2, 0.8).toFixed(2)})/(${r.real(0.4, 1).toFixed(2)}*hypot(W,H)))`,
    'three-stop': 'abs(2*Y/H-1)',
  }[kind]!;
  const ch = (k: number) => `${a[k]}+(${b[k] - a[k]})*${t}`;
  return lavfi('gradient', `${kind} ${w}x${h}`, `color=c=black:s=${w}x${h}`, geq(ch(0), ch(1), ch(2)));
}

function noise(r: Rng, i: number, w: number, h: number): Recipe {
  const strength = r.pick([6, 15, 30, 60, 90]);
  const base = hex(r);
  const kind = ['grey', 'colour', 'on-gradient', 'clouds'][i % 4];
  const size = `s=${w}x${h}`;
  if (kind === 'grey') return lavfi('noise', `grey ${strength} ${w}x${h}`, `color=c=${base}:${size}`, `format=gray,noise=alls=${strength}:allf=u`);
  if (kind === 'colour') return lavfi('noise', `colour ${strength} ${w}x${h}`, `color=c=${base}:${size}`, `noise=c0s=${strength}:c1s=${strength}:c2s=${strength}:allf=u`);
  if (kind === 'on-gradient') {
    const [a, b] = [rgbOf(base), rgbOf(hex(r))];
    const ch = (k: number) => `${a[k]}+(${b[k] - a[k]})*(X+Y)/(W+H)`;
    return lavfi('noise', `on gradient ${strength} ${w}x${h}`, `color=c=black:${size}`, `${geq(ch(0), ch(1), ch(2))},format=yuv444p,noise=alls=${strength}:allf=u`);
  }
  // Clouds: coarse random values, scaled up smoothly and blurred.
  const cells = 8 + r.int(24);
  return lavfi('noise', `clouds ${cells} ${w}x${h}`, `color=c=black:s=${cells}x${cells}`,
    `${geq(`random(1)*255`, `random(2)*255`, `128+random(3)*127`)},scale=${w}:${h}:flags=bicubic,gblur=sigma=${(w / cells / 3).toFixed(1)}`);
}

function text(r: Rng, i: number, w: number, h: number, font: string): Recipe {
  const bg = hex(r);
  const ink = rgbOf(bg).reduce((s, v) => s + v, 0) > 380 ? 'black' : 'white';
  const size = Math.round(Math.min(w, h) / [6, 10, 16, 24][i % 4]);
  const lines = 1 + r.int(Math.max(1, Math.floor(h / (size * 1.6)) - 1));
  const kind = i % 3 === 0 ? 'centred' : i % 3 === 1 ? 'paragraph' : 'scattered';
  const draws = Array.from({ length: kind === 'centred' ? Math.min(lines, 3) : lines }, (_, k) => {
    const words = Array.from({ length: 2 + r.int(5) }, () => r.pick(WORDS)).join(' ');
    const y = kind === 'scattered' ? `${r.int(h - size)}` : `(h-${Math.min(lines, kind === 'centred' ? 3 : lines)}*${Math.round(size * 1.4)})/2+${k * Math.round(size * 1.4)}`;
    const x = kind === 'scattered' ? `${r.int(Math.max(1, w / 2))}` : kind === 'centred' ? '(w-tw)/2' : `${Math.round(size / 2)}`;
    return `drawtext=fontfile=${filterValue(font)}:text='${words}':fontsize=${size}:fontcolor=${ink}:x=${x}:y=${y}`;
  });
  return lavfi('text', `${kind} ${lines} lines ${size}px ${w}x${h}`, `color=c=${bg}:s=${w}x${h}`, draws.join(','));
}

function shapes(r: Rng, i: number, w: number, h: number): Recipe {
  const kind = ['boxes', 'circles', 'lines', 'mixed'][i % 4];
  const box = () => `drawbox=x=${r.int(w)}:y=${r.int(h)}:w=${16 + r.int(w / 2)}:h=${16 + r.int(h / 2)}:color=${hex(r)}:t=${r.int(3) === 0 ? 4 : 'fill'}`;
  // Lines: thin boxes running part or all of the way across, at positions from the generator.
  const line = () => (r.int(2) === 0
    ? `drawbox=x=${r.int(w)}:y=0:w=${1 + r.int(4)}:h=${h - r.int(h / 2)}:color=${hex(r)}:t=fill`
    : `drawbox=x=0:y=${r.int(h)}:w=${w - r.int(w / 2)}:h=${1 + r.int(4)}:color=${hex(r)}:t=fill`);
  const circles = () => {
    let expr = rgbOf(hex(r)).map(String);
    for (let n = 0; n < 2 + r.int(4); n++) {
      const c = rgbOf(hex(r));
      const test = `lt(hypot(X-${r.int(w)},Y-${r.int(h)}),${10 + r.int(Math.min(w, h) / 3)})`;
      expr = expr.map((e, k) => `if(${test},${c[k]},${e})`);
    }
    return geq(expr[0], expr[1], expr[2]);
  };
  const diagonal = () => {
    const a = r.real(0, Math.PI).toFixed(3);
    const c = rgbOf(hex(r));
    const bg = rgbOf(hex(r));
    const test = `lt(abs((X-W/2)*sin(${a})-(Y-H/2)*cos(${a})-${r.int(w / 3)}),${2 + r.int(6)})`;
    return geq(`if(${test},${c[0]},${bg[0]})`, `if(${test},${c[1]},${bg[1]})`, `if(${test},${c[2]},${bg[2]})`);
  };
  const src = `color=c=${hex(r)}:s=${w}x${h}`;
  const n = 2 + r.int(6);
  if (kind === 'boxes') return lavfi('shapes', `boxes ${w}x${h}`, src, Array.from({ length: n }, box).join(','));
  if (kind === 'circles') return lavfi('shapes', `circles ${w}x${h}`, src, circles());
  if (kind === 'lines') return lavfi('shapes', `lines ${w}x${h}`, src, `${diagonal()},format=rgb24,${Array.from({ length: n }, line).join(',')}`);
  return lavfi('shapes', `mixed ${w}x${h}`, src, `${circles()},format=rgb24,${box()},${line()},${box()}`);
}

/**
 * A landscape: a sky over ground, split by a horizon anywhere from a quarter to three quarters of
 * the height (straight in a third of them, else hilly), with light noise, and some buildings that
 * stand across the horizon.
 */
function scene(r: Rng, i: number, w: number, h: number): Recipe {
  const hy = r.real(0.25, 0.75) * h;
  const amp = i % 3 === 0 ? 0 : r.real(0.005, 0.05) * h;
  // Two hills of unrelated widths: real ground does not repeat across the picture.
  const hill = () => `${amp.toFixed(1)}*sin(X/W*${r.real(2, 20).toFixed(2)}+${r.real(0, 6).toFixed(2)})`;
  const horizon = `(${hy.toFixed(1)}+${hill()}+0.5*${hill()})`;
  const [skyTop, skyLow, near, far] = [rgbOf(hex(r)), rgbOf(hex(r)), rgbOf(hex(r)), rgbOf(hex(r))];
  const ch = (k: number) => `if(lt(Y,${horizon}),${skyTop[k]}+(${skyLow[k] - skyTop[k]})*Y/${horizon},${far[k]}+(${near[k] - far[k]})*(Y-${horizon})/(H-${horizon}))`;
  const buildings = Array.from({ length: r.int(5) }, () => {
    const top = Math.round(Math.max(0.1 * h, hy - r.real(0.05, 0.3) * h));
    return `drawbox=x=${r.int(w)}:y=${top}:w=${8 + r.int(w / 6)}:h=${h - top}:color=${hex(r)}:t=fill`;
  });
  const grain = r.pick([0, 4, 10]);
  const filters = [geq(ch(0), ch(1), ch(2)), 'format=yuv444p', ...(grain ? [`noise=alls=${grain}:allf=u`] : []), ...buildings];
  return lavfi('scene', `horizon ${(hy / h).toFixed(2)}${amp ? ' hilly' : ''}, ${buildings.length} buildings ${w}x${h}`, `color=c=black:s=${w}x${h}`, filters.join(','));
}

/** ffmpeg's own test sources, at a frame a little way in. */
function testSource(r: Rng, i: number, w: number, h: number): Recipe {
  const s = `s=${w}x${h}`;
  const sources = [
    `testsrc=${s}`, `testsrc2=${s}`, `smptebars=${s}`, `smptehdbars=${s}`, `rgbtestsrc=${s}`, `yuvtestsrc=${s}`,
    `pal75bars=${s}`, `pal100bars=${s}`,
    `mandelbrot=${s}:start_scale=${r.real(0.5, 3).toFixed(2)}:start_x=${r.real(-1.5, 0).toFixed(3)}:start_y=${r.real(-0.5, 0.5).toFixed(3)}`,
    `life=${s}:ratio=${r.real(0.05, 0.5).toFixed(2)}:mold=${r.int(40)}:death_color=${hex(r)}:life_color=${hex(r)}:mold_color=${hex(r)}:seed=${r.int(1000)}`,
    `cellauto=${s}:rule=${r.pick([18, 30, 90, 110, 150])}:random_fill_ratio=${r.real(0.1, 0.9).toFixed(2)}:seed=${r.int(1000)}`,
  ];
  const source = sources[i % sources.length];
  const frame = r.int(40);
  return lavfi('testsrc', `${source.split('=')[0]} frame ${frame} ${w}x${h}`, source, `select=gte(n\\,${frame})`);
}

/** Runs jobs at most `limit` at a time, keeping their order. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

async function renderRecipe(recipe: Recipe, file: string): Promise<void> {
  await runFfmpeg(['-v', 'error', ...recipe.input, ...(recipe.filter ? ['-vf', recipe.filter] : []), '-frames:v', '1', '-y', file]);
}

// ---- the model server ----------------------------------------------------------------------

async function modelImage(ms: RunningModelServer, file: string, prompt: string, size: string, faults: Record<string, unknown>): Promise<void> {
  ms.faults.set({ reset: true, ...faults });
  const answer = await fetch(`${ms.url}/v1/images/generations`, { method: 'POST', body: JSON.stringify({ prompt, size, response_format: 'b64_json' }) });
  if (answer.status !== 200) throw new Error(`model server image: ${answer.status} ${await answer.text()}`);
  const { data } = (await answer.json()) as { data: Array<{ b64_json: string }> };
  fs.writeFileSync(file, Buffer.from(data[0].b64_json, 'base64'));
}

/** A video from the model server, saved as MP4. */
async function modelVideo(ms: RunningModelServer, file: string, prompt: string, size: string): Promise<void> {
  ms.faults.set({ reset: true });
  const created = await fetch(`${ms.url}/v1/videos`, { method: 'POST', body: JSON.stringify({ prompt, size, seconds: 1 }) });
  const { id } = (await created.json()) as { id: string };
  for (let tries = 0; ; tries++) {
    const { status } = (await (await fetch(`${ms.url}/v1/videos/${id}`)).json()) as { status: string };
    if (status === 'completed') break;
    if (status === 'failed' || tries > 600) throw new Error(`model server video ${id}: ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  fs.writeFileSync(file, Buffer.from(await (await fetch(`${ms.url}/v1/videos/${id}/content`)).arrayBuffer()));
}

const PROMPTS = [
  'a red door at the end of a corridor', 'the night train leaves the platform', 'a gray cat in a hat, with a long caption drawn across the middle of the image',
  'two friends on a bench', 'storm over the harbour', 'blue morning light on the river', 'the villain reads a letter', 'a yellow taxi in the rain',
  'close-up of a hand holding a ticket', 'an empty stage with one lantern', 'white snow on the roofs', 'purple neon sign',
];

// ---- composites ------------------------------------------------------------------------------

interface Composite {
  family: string;
  cols: number;
  rows: number;
  method: 'hstack' | 'vstack' | 'xstack' | 'tile';
  panels: string[];
  panelW: number;
  panelH: number;
  gutter: number;
  gutterColour: string;
  /** Gutter also around the outside (tile's margin, or a padded border). */
  margin: boolean;
  /** Rescale the result to this size (a model asked for one size that answers a grid). */
  out?: readonly [number, number];
}

function compositeArgs(c: Composite, file: string): string[] {
  const n = c.cols * c.rows;
  const inputs = c.panels.flatMap((p) => ['-i', p]);
  const g = c.gutter;
  const scaled = c.panels.map((_, k) => `[${k}:v]scale=${c.panelW}:${c.panelH},setsar=1,format=rgb24`);
  const parts: string[] = [];
  let last: string;
  if (c.method === 'tile') {
    parts.push(...scaled.map((s, k) => `${s}[p${k}]`));
    parts.push(`${c.panels.map((_, k) => `[p${k}]`).join('')}concat=n=${n}:v=1:a=0,tile=${c.cols}x${c.rows}:padding=${g}:margin=${c.margin ? g : 0}:color=${c.gutterColour}[t]`);
    last = 't';
  } else {
    // Each panel padded on its right and bottom with the gutter, except the last column and row.
    parts.push(...scaled.map((s, k) => {
      const right = k % c.cols < c.cols - 1 ? g : 0;
      const bottom = Math.floor(k / c.cols) < c.rows - 1 ? g : 0;
      return `${s},pad=${c.panelW + right}:${c.panelH + bottom}:0:0:${c.gutterColour}[p${k}]`;
    }));
    const labels = c.panels.map((_, k) => `[p${k}]`);
    if (c.method === 'hstack' || c.method === 'vstack') {
      if (c.cols > 1 && c.rows > 1) {
        // Rows side by side, then the rows stacked.
        for (let row = 0; row < c.rows; row++) parts.push(`${labels.slice(row * c.cols, (row + 1) * c.cols).join('')}hstack=inputs=${c.cols}[r${row}]`);
        parts.push(`${Array.from({ length: c.rows }, (_, row) => `[r${row}]`).join('')}vstack=inputs=${c.rows}[t]`);
      } else {
        parts.push(`${labels.join('')}${c.cols > 1 ? 'hstack' : 'vstack'}=inputs=${n}[t]`);
      }
    } else {
      const xs = (k: number) => Array.from({ length: k % c.cols }, (_, j) => `w${j}`).join('+') || '0';
      const ys = (k: number) => Array.from({ length: Math.floor(k / c.cols) }, (_, j) => `h${j * c.cols}`).join('+') || '0';
      parts.push(`${labels.join('')}xstack=inputs=${n}:layout=${c.panels.map((_, k) => `${xs(k)}_${ys(k)}`).join('|')}[t]`);
    }
    last = 't';
    if (c.margin && g > 0) {
      parts.push(`[t]pad=iw+${2 * g}:ih+${2 * g}:${g}:${g}:${c.gutterColour}[m]`);
      last = 'm';
    }
  }
  if (c.out) {
    parts.push(`[${last}]scale=${c.out[0]}:${c.out[1]}:flags=bicubic[o]`);
    last = 'o';
  }
  return ['-v', 'error', ...inputs, '-filter_complex', parts.join(';'), '-map', `[${last}]`, '-frames:v', '1', '-y', file];
}

function describe(c: Composite): string {
  const gutter = c.gutter ? `gutter ${c.gutter} ${c.gutterColour}${c.margin ? ' + margin' : ''}` : 'no gutter';
  return `${c.method} ${c.panelW}x${c.panelH} panels, ${gutter}${c.out ? `, scaled to ${c.out[0]}x${c.out[1]}` : ''}`;
}

const LAYOUTS: ReadonlyArray<readonly [number, number]> = [[2, 1], [1, 2], [2, 2], [3, 3]];
const GUTTER_COLOURS = ['black', 'white', 'gray'];

function methodFor(r: Rng, cols: number, rows: number): Composite['method'] {
  if (cols > 1 && rows > 1) return r.pick(['xstack', 'tile', 'hstack'] as const);
  return r.pick([cols > 1 ? 'hstack' : 'vstack', 'xstack', 'tile'] as const);
}

/** Panel size for a layout, so that the composite is at most ~1600 px across. */
function panelSize(r: Rng, cols: number, rows: number): [number, number] {
  const [w, h] = r.pick(SIZES);
  const f = Math.min(1, 1600 / (w * cols), 1600 / (h * rows));
  return [Math.max(64, Math.round(w * f / 2) * 2), Math.max(64, Math.round(h * f / 2) * 2)];
}

function planComposite(r: Rng, family: string, panels: string[], cols: number, rows: number): Composite {
  const [panelW, panelH] = panelSize(r, cols, rows);
  const gutter = r.pick([0, 0, 2, 4, 8]);
  const scaleTo = r.int(3) === 0 ? r.pick(SIZES) : undefined;
  return {
    family, cols, rows, method: methodFor(r, cols, rows), panels, panelW, panelH, gutter, gutterColour: r.pick(GUTTER_COLOURS),
    margin: gutter > 0 && r.int(2) === 0, out: scaleTo,
  };
}

// ---- the set ----------------------------------------------------------------------------------

export interface BuildOptions {
  size: SetSize;
  /** Another seed gives another set of the same kind (default: one fixed seed per size). */
  seed?: number;
  /** ffmpeg processes at once (default: the machine's parallelism). */
  concurrency?: number;
  /** Called after each image built (for progress lines). */
  onProgress?: (built: number) => void;
}

/**
 * Pictures of Debian's desktop background packages (JPEG and PNG of at least 320x320: not the
 * logos), by path; empty when none are installed.
 */
export async function findPhotos(): Promise<string[]> {
  const found = new Set<string>();
  for (const dir of PHOTO_DIRS) {
    let names: string[];
    try {
      names = fs.readdirSync(dir, { recursive: true }) as string[];
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(dir, name);
      if (/\.(jpe?g|png)$/i.test(name) && fs.statSync(file).isFile()) found.add(fs.realpathSync(file));
    }
  }
  const photos: string[] = [];
  for (const file of [...found].sort()) {
    const probe = await runFfprobe<{ streams?: Array<{ width?: number; height?: number }> }>(
      ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'json', file]).catch(() => null);
    const stream = probe?.json?.streams?.[0];
    if (stream && (stream.width ?? 0) >= 320 && (stream.height ?? 0) >= 320) photos.push(file);
  }
  return photos;
}

/** Builds the set into `dir` (which must exist) and returns its entries, singles first. */
export async function buildCollageSet(dir: string, opts: BuildOptions): Promise<SetEntry[]> {
  const full = opts.size === 'full';
  const concurrency = opts.concurrency ?? Math.max(2, os.availableParallelism());
  const r = rng(opts.seed ?? (full ? 20240611 : 7));
  const font = await findFont();
  const perFamily = full ? 30 : 4;
  const recipes: Recipe[] = [];
  for (let i = 0; i < perFamily; i++) {
    const size = () => r.pick(SIZES);
    recipes.push(gradient(r, i, ...size()), noise(r, i, ...size()), shapes(r, i, ...size()), scene(r, i, ...size()));
    if (font) recipes.push(text(r, i, ...size(), font));
  }
  // Every test source at least once in the full set; a few in the test set.
  for (let i = 0; i < (full ? 33 : 4); i++) recipes.push(testSource(r, full ? i : i * 3 + 1, ...r.pick(SIZES)));

  let built = 0;
  const progress = () => opts.onProgress?.(++built);
  const singles: SetEntry[] = await pool(recipes, concurrency, async (recipe, i) => {
    const file = path.join(dir, `single-${String(i).padStart(3, '0')}-${recipe.family}.png`);
    await renderRecipe(recipe, file);
    progress();
    return { file, label: 'single', family: recipe.family, detail: recipe.detail };
  });

  // The model server: single images, the first frame of its videos, and its own composites.
  const composites: SetEntry[] = [];
  const ms = await startModelServer();
  const videos: string[] = [];
  try {
    const imageCount = full ? 24 : 3;
    for (let i = 0; i < imageCount; i++) {
      const [w, h] = SIZES[i % SIZES.length];
      const prompt = PROMPTS[i % PROMPTS.length];
      const file = path.join(dir, `single-model-${i}.png`);
      await modelImage(ms, file, prompt, `${w}x${h}`, {});
      singles.push({ file, label: 'single', family: 'modelserver', detail: `image "${prompt}" ${w}x${h}` });
    }
    const videoCount = full ? 8 : 2;
    for (let i = 0; i < videoCount; i++) {
      const [w, h] = SIZES[(i * 2 + 1) % SIZES.length].map((v) => v & ~1);
      const prompt = PROMPTS[(i * 5 + 3) % PROMPTS.length];
      const video = path.join(dir, `video-${i}.mp4`);
      await modelVideo(ms, video, prompt, `${w}x${h}`);
      videos.push(video);
      const file = path.join(dir, `single-video-${i}-first-frame.png`);
      await runFfmpeg(['-v', 'error', '-i', video, '-frames:v', '1', '-y', file]);
      singles.push({ file, label: 'single', family: 'video-frame', detail: `first frame of "${prompt}" ${w}x${h}` });
    }
    const faulted = full ? 8 : 2;
    for (let i = 0; i < faulted; i++) {
      const [w, h] = SIZES[(i * 3 + 2) % SIZES.length];
      const prompt = PROMPTS[(i * 7 + 1) % PROMPTS.length];
      const collage = i % 2 === 0;
      const file = path.join(dir, `composite-model-${i}.png`);
      await modelImage(ms, file, prompt, `${w}x${h}`, collage ? { collage: true } : { split: true });
      composites.push({ file, label: 'composite', family: 'modelserver', layout: collage ? '2x2' : '2x1', detail: `${collage ? 'collage' : 'split'} fault ${w}x${h}` });
    }
  } finally {
    await ms.close();
  }

  const photos = (await findPhotos()).slice(0, full ? 40 : 4);
  for (const [i, photo] of photos.entries()) {
    const file = path.join(dir, `single-photo-${i}.png`);
    // Photographs at a working size (some backgrounds are 4K and more).
    await runFfmpeg(['-v', 'error', '-i', photo, '-vf', 'scale=1280:-2', '-frames:v', '1', '-y', file]);
    singles.push({ file, label: 'single', family: 'photo', detail: path.basename(photo) });
  }

  // Composites of the singles: mixed families, and hard ones of one family.
  const byFamily = new Map<string, string[]>();
  for (const s of singles) byFamily.set(s.family, [...(byFamily.get(s.family) ?? []), s.file]);
  const families = [...byFamily.keys()];
  const plans: Composite[] = [];
  const rounds = full ? 20 : 2;
  for (let round = 0; round < rounds; round++) {
    for (const [cols, rows] of LAYOUTS) {
      const n = cols * rows;
      const mixed = Array.from({ length: n }, () => r.pick(byFamily.get(r.pick(families))!));
      plans.push(planComposite(r, 'mixed', mixed, cols, rows));
      const family = families[(round * LAYOUTS.length + plans.length) % families.length];
      const members = byFamily.get(family)!;
      plans.push(planComposite(r, `same:${family}`, Array.from({ length: n }, () => r.pick(members)), cols, rows));
    }
  }
  // Contact sheets of consecutive frames of one video (a storyboard): test sources that move, and the model server's videos.
  const sheets: Array<{ family: string; input: string[]; cols: number; rows: number; step: number }> = [];
  const moving = ['testsrc2', 'testsrc', 'mandelbrot', 'life'];
  for (let i = 0; i < (full ? 8 : 2); i++) {
    const [cols, rows] = i % 2 === 0 ? [3, 3] : [2, 2];
    const [w, h] = panelSize(r, cols, rows);
    const src = moving[i % moving.length];
    sheets.push({ family: `sheet:${src}`, input: ['-f', 'lavfi', '-i', `${src}=s=${w}x${h}:r=25`], cols, rows, step: 5 + r.int(20) });
  }
  for (const [i, video] of videos.slice(0, full ? 4 : 1).entries()) {
    const [cols, rows] = i % 2 === 0 ? [3, 3] : [2, 2];
    sheets.push({ family: 'sheet:video', input: ['-i', video], cols, rows, step: 2 });
  }

  const jobs: Array<() => Promise<SetEntry>> = [];
  for (const [i, c] of plans.entries()) {
    const file = path.join(dir, `composite-${String(i).padStart(3, '0')}.png`);
    jobs.push(async () => {
      await runFfmpeg(compositeArgs(c, file));
      return { file, label: 'composite', family: c.family, layout: `${c.cols}x${c.rows}`, detail: describe(c) };
    });
  }
  for (const [i, s] of sheets.entries()) {
    const file = path.join(dir, `sheet-${i}.png`);
    const gutter = r.pick([0, 2, 4]);
    const colour = r.pick(GUTTER_COLOURS);
    jobs.push(async () => {
      await runFfmpeg(['-v', 'error', ...s.input, '-vf', `select=not(mod(n\\,${s.step})),tile=${s.cols}x${s.rows}:padding=${gutter}:color=${colour}`, '-frames:v', '1', '-y', file]);
      return { file, label: 'composite', family: s.family, layout: `${s.cols}x${s.rows}`, detail: `tile of every ${s.step}th frame, gutter ${gutter} ${colour}` };
    });
  }
  const made = await pool(jobs, concurrency, async (job) => {
    const entry = await job();
    progress();
    return entry;
  });
  return [...singles, ...composites, ...made];
}
