// Figure: the composite detector (src/media-tools/collage.ts) on the full labelled set of
// test/helpers/collage-set.ts, built with ffmpeg into a temporary directory: its detection rate
// (composites found / composites), false-positive rate (singles flagged / singles), both per family
// and per layout, and images per second through detectComposite (decode + analysis, as many at once
// as the machine has cores). Goal: at least 95% found, at most 2% flagged.
// BENCH_COLLAGE_SEED=N builds another set of the same kind (the thresholds were set on the default one).
import os from 'node:os';
import { detectComposite, type CompositeResult } from '../src/media-tools/collage.ts';
import { buildCollageSet, findPhotos, type SetEntry } from '../test/helpers/collage-set.ts';
import { goal, num, printTable, tempDir } from './lib.ts';

const GOAL_DETECTED = 0.95;
const GOAL_FLAGGED = 0.02;
const seed = process.env.BENCH_COLLAGE_SEED ? Number(process.env.BENCH_COLLAGE_SEED) : undefined;
const concurrency = Math.max(1, os.availableParallelism());

const dir = tempDir('svc-bench-collage-');
const photos = await findPhotos();
const t0 = performance.now();
const set = await buildCollageSet(dir, {
  size: 'full', seed, concurrency,
  onProgress: (n) => { if (n % 100 === 0) process.stdout.write(`  built ${n} images\n`); },
});
const buildSeconds = (performance.now() - t0) / 1000;

const results = new Array<CompositeResult>(set.length);
const t1 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: concurrency }, async () => {
  for (let i = next++; i < set.length; i = next++) results[i] = await detectComposite(set[i].file);
}));
const detectSeconds = (performance.now() - t1) / 1000;

const flaggedOf = (entries: Array<[SetEntry, CompositeResult]>) => entries.filter(([, r]) => r.composite !== null).length;
const pairs = set.map((e, i) => [e, results[i]] as [SetEntry, CompositeResult]);
const composites = pairs.filter(([e]) => e.label === 'composite');
const singles = pairs.filter(([e]) => e.label === 'single');
const detected = flaggedOf(composites);
const flagged = flaggedOf(singles);
const detectionRate = detected / composites.length;
const falsePositiveRate = flagged / singles.length;
const pct = (x: number) => `${num(100 * x, 1)}%`;

/** Rows of [group, count, flagged, rate] for entries grouped by `key`. */
function grouped(entries: Array<[SetEntry, CompositeResult]>, key: (e: SetEntry) => string): string[][] {
  const groups = new Map<string, Array<[SetEntry, CompositeResult]>>();
  for (const p of entries) groups.set(key(p[0]), [...(groups.get(key(p[0])) ?? []), p]);
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, g]) => [name, String(g.length), String(flaggedOf(g)), pct(flaggedOf(g) / g.length)]);
}

const kindOf = (e: SetEntry) => {
  const [cols, rows] = (e.layout ?? '1x1').split('x').map(Number);
  return cols >= 3 && rows >= 3 ? 'contact_sheet' : cols >= 2 && rows >= 2 ? 'collage' : 'split_screen';
};
const named = composites.filter(([e, r]) => r.composite === kindOf(e)).length;

printTable(`Composite detector on the labelled set (${set.length} images${seed === undefined ? '' : `, seed ${seed}`})`, [
  ['figure', 'value', 'goal', 'result'],
  ['composites detected', `${detected} / ${composites.length} = ${pct(detectionRate)}`, `>= ${pct(GOAL_DETECTED)}`, goal(detectionRate >= GOAL_DETECTED)],
  ['singles flagged (false positives)', `${flagged} / ${singles.length} = ${pct(falsePositiveRate)}`, `<= ${pct(GOAL_FLAGGED)}`, goal(falsePositiveRate <= GOAL_FLAGGED)],
  ['detected composites named as built', `${named} / ${detected}`, '', ''],
  ['images per second (decode + analysis)', num(set.length / detectSeconds, 1), '', ''],
], [
  `detectComposite on ${concurrency} at once; ${num(detectSeconds, 1)} s for all (${num((1000 * detectSeconds * concurrency) / set.length, 1)} ms per image per core); the set took ${num(buildSeconds, 1)} s to build`,
  photos.length ? `photographs: ${Math.min(photos.length, 40)} of ${photos.length} pictures of Debian's desktop background packages` : 'photographs: none (no Debian desktop background package installed)',
]);

printTable('Singles by family (flagged = false positives)', [['family', 'singles', 'flagged', 'rate'], ...grouped(singles, (e) => e.family)]);
printTable('Composites by layout', [['layout', 'composites', 'detected', 'rate'], ...grouped(composites, (e) => e.layout ?? '?')]);
printTable('Composites by where the panels came from', [['panels', 'composites', 'detected', 'rate'], ...grouped(composites, (e) => e.family)]);

const wrong = pairs.filter(([e, r]) => (r.composite !== null) !== (e.label === 'composite'));
if (wrong.length) {
  printTable('Wrong verdicts', [
    ['label', 'family', 'layout', 'built as', 'verdict', 'seams (vertical | horizontal)'],
    ...wrong.map(([e, r]) => [e.label, e.family, e.layout ?? '', e.detail, r.composite ?? 'single', `${r.seams.vertical.join(' ')} | ${r.seams.horizontal.join(' ')}`]),
  ]);
}
process.stdout.write(`\ngoal (>= ${pct(GOAL_DETECTED)} detected, <= ${pct(GOAL_FLAGGED)} false positives): ${
  goal(detectionRate >= GOAL_DETECTED && falsePositiveRate <= GOAL_FLAGGED)}\n`);
