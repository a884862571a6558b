// The stored documents: a script { scenes } and a bible { entries }, normalised from the input
// (ids assigned where absent and checked for uniqueness, dialogue needs a character) into a fixed
// field order, so that the same content always has the same JSON text and SHA-256.
import { validationFailed } from '../../kernel/errors.ts';
import { newId } from '../../kernel/ids.ts';
import type { BibleSave, ScriptSave } from './schema.ts';

export interface ScriptLine { id: string; kind: 'dialogue' | 'action' | 'note'; character: string | null; text: string }
export interface ScriptScene { id: string; heading: string; location: string; timeOfDay: string; lines: ScriptLine[] }
export interface ScriptContent { scenes: ScriptScene[] }

export interface BibleEntry {
  id: string; kind: 'character' | 'location' | 'prop' | 'style_note'; name: string; description: string;
  attributes: Record<string, string>; referenceAssetIds: string[];
}
export interface BibleContent { entries: BibleEntry[] }

export const EMPTY_SCRIPT: ScriptContent = Object.freeze({ scenes: [] });
export const EMPTY_BIBLE: BibleContent = Object.freeze({ entries: [] });

/** Ids are unique within one document (scenes and lines share one namespace). */
function idKeeper(errors: Record<string, string>) {
  const seen = new Set<string>();
  return (id: string | undefined, prefix: string, path: string): string => {
    if (id === undefined) return newId(prefix);
    if (seen.has(id)) errors[path] = 'repeats an id used earlier in the document';
    seen.add(id);
    return id;
  };
}

export function normalizeScript(input: ScriptSave['scenes']): ScriptContent {
  const errors: Record<string, string> = {};
  const keep = idKeeper(errors);
  // Ids given by the client first, so that a generated one can never collide with a later given one.
  const scenes = input.map((s, i) => ({ s, id: keep(s.id, 'scn', `scenes[${i}].id`) }));
  const lineIds = input.map((s, i) => (s.lines ?? []).map((l, j) => keep(l.id, 'ln', `scenes[${i}].lines[${j}].id`)));
  const content: ScriptContent = {
    scenes: scenes.map(({ s, id }, i) => ({
      id, heading: s.heading ?? '', location: s.location ?? '', timeOfDay: s.timeOfDay ?? '',
      lines: (s.lines ?? []).map((l, j) => {
        const character = l.character?.trim() || null;
        if (l.kind === 'dialogue' && !character) errors[`scenes[${i}].lines[${j}].character`] = 'is required for dialogue';
        if (l.kind !== 'dialogue' && character) errors[`scenes[${i}].lines[${j}].character`] = 'is only for dialogue';
        return { id: lineIds[i][j], kind: l.kind, character, text: l.text };
      }),
    })),
  };
  if (Object.keys(errors).length) throw validationFailed(errors);
  return content;
}

export function normalizeBible(input: BibleSave['entries']): BibleContent {
  const errors: Record<string, string> = {};
  const keep = idKeeper(errors);
  const names = new Set<string>();
  const ids = input.map((e, i) => keep(e.id, 'bib', `entries[${i}].id`));
  const content: BibleContent = {
    entries: input.map((e, i) => {
      const key = `${e.kind}\u0000${e.name.toLowerCase()}`;
      if (names.has(key)) errors[`entries[${i}].name`] = `repeats the name of another ${e.kind}`;
      names.add(key);
      return {
        id: ids[i], kind: e.kind, name: e.name, description: e.description ?? '',
        attributes: e.attributes ?? {}, referenceAssetIds: e.referenceAssetIds ?? [],
      };
    }),
  };
  if (Object.keys(errors).length) throw validationFailed(errors);
  return content;
}

export const scriptItemCount = (c: ScriptContent) => c.scenes.length;
export const lineCount = (c: ScriptContent) => c.scenes.reduce((n, s) => n + s.lines.length, 0);
