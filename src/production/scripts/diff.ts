// Diffs of two revisions, matched by the stable ids of scenes, lines and bible entries.
//
// A keyed list diff is { added, removed, changed }: `added` and `removed` hold the whole item with
// its `position` (0-based) in the newer or older list; `changed` holds { id, position, fields, moved }
// for items in both whose fields differ or whose order moved, where `fields` maps each changed field
// to { from, to } and `moved` is true when the item left the longest run of items that kept their
// relative order (so inserting one line does not mark the lines after it as moved).
import type { BibleContent, BibleEntry, ScriptContent, ScriptLine, ScriptScene } from './content.ts';

export interface FieldChange { from: unknown; to: unknown }
export interface Changed { id: string; position: number; fields: Record<string, FieldChange>; moved: boolean }
export interface ListDiff<T> { added: Array<T & { position: number }>; removed: Array<T & { position: number }>; changed: Changed[] }

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Indexes (into `seq`) of one longest strictly increasing subsequence. */
function longestIncreasing(seq: number[]): Set<number> {
  const tails: number[] = [];
  const prev = new Array<number>(seq.length).fill(-1);
  for (let i = 0; i < seq.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (seq[tails[mid]] < seq[i]) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[i] = tails[lo - 1];
    tails[lo] = i;
  }
  const keep = new Set<number>();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) keep.add(i);
  return keep;
}

export function keyedDiff<T extends { id: string }>(a: readonly T[], b: readonly T[], fields: readonly (keyof T & string)[]): ListDiff<T> {
  const oldAt = new Map(a.map((x, i) => [x.id, i]));
  const newIds = new Set(b.map((x) => x.id));
  const common = b.map((x, i) => ({ x, i, from: oldAt.get(x.id) })).filter((c) => c.from !== undefined);
  const inOrder = longestIncreasing(common.map((c) => c.from!));
  const out: ListDiff<T> = {
    added: b.flatMap((x, i) => (oldAt.has(x.id) ? [] : [{ ...x, position: i }])),
    removed: a.flatMap((x, i) => (newIds.has(x.id) ? [] : [{ ...x, position: i }])),
    changed: [],
  };
  common.forEach((c, k) => {
    const before = a[c.from!];
    const changes: Record<string, FieldChange> = {};
    for (const f of fields) if (!same(before[f], c.x[f])) changes[f] = { from: before[f], to: c.x[f] };
    const moved = !inOrder.has(k);
    if (moved || Object.keys(changes).length > 0) out.changed.push({ id: c.x.id, position: c.i, fields: changes, moved });
  });
  return out;
}

const LINE_FIELDS = ['kind', 'character', 'text'] as const satisfies readonly (keyof ScriptLine)[];
const SCENE_FIELDS = ['heading', 'location', 'timeOfDay'] as const satisfies readonly (keyof ScriptScene)[];
const ENTRY_FIELDS = ['kind', 'name', 'description', 'attributes', 'referenceAssetIds'] as const satisfies readonly (keyof BibleEntry)[];

export interface SceneChange extends Changed { heading: string; lines: ListDiff<ScriptLine> }

/**
 * Script diff: scenes keyed by id; a scene in both lists is `changed` when its heading, location,
 * time of day or order changed or any of its lines did (`lines` is the keyed diff of its lines).
 * A line moved to another scene shows as removed from the one and added to the other.
 */
export function diffScript(a: ScriptContent, b: ScriptContent) {
  const scenes = keyedDiff(a.scenes, b.scenes, SCENE_FIELDS);
  const fieldChanges = new Map(scenes.changed.map((c) => [c.id, c]));
  const oldScenes = new Map(a.scenes.map((s) => [s.id, s]));
  const changed: SceneChange[] = [];
  b.scenes.forEach((scene, position) => {
    const old = oldScenes.get(scene.id);
    if (!old) return;
    const lines = keyedDiff(old.lines, scene.lines, LINE_FIELDS);
    const c = fieldChanges.get(scene.id);
    if (c || lines.added.length || lines.removed.length || lines.changed.length) {
      changed.push({ id: scene.id, position, heading: scene.heading, fields: c?.fields ?? {}, moved: c?.moved ?? false, lines });
    }
  });
  const count = (k: 'added' | 'removed' | 'changed') => changed.reduce((n, c) => n + c.lines[k].length, 0);
  return {
    scenes: { added: scenes.added, removed: scenes.removed, changed },
    summary: {
      scenesAdded: scenes.added.length, scenesRemoved: scenes.removed.length, scenesChanged: changed.length,
      linesAdded: count('added') + scenes.added.reduce((n, s) => n + s.lines.length, 0),
      linesRemoved: count('removed') + scenes.removed.reduce((n, s) => n + s.lines.length, 0),
      linesChanged: count('changed'),
    },
  };
}

/** Bible diff: entries keyed by id, with field-level changes. */
export function diffBible(a: BibleContent, b: BibleContent) {
  const entries = keyedDiff(a.entries, b.entries, ENTRY_FIELDS);
  return {
    entries,
    summary: { entriesAdded: entries.added.length, entriesRemoved: entries.removed.length, entriesChanged: entries.changed.length },
  };
}
