// Input of the script and story bible routes. Limits: a script has at most 500 scenes, a scene at
// most 2000 lines, a text at most 10,000 characters; a bible at most 2000 entries. Ids of scenes,
// lines and entries may be sent (to keep them across revisions, which the diff matches on) or left
// out (the server assigns one).
import * as v from '../../kernel/validate.ts';

export const MAX_SCENES = 500;
export const MAX_LINES_PER_SCENE = 2000;
export const MAX_TEXT = 10_000;
export const MAX_ENTRIES = 2000;

export const LINE_KINDS = ['dialogue', 'action', 'note'] as const;
export const ENTRY_KINDS = ['character', 'location', 'prop', 'style_note'] as const;

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const itemId = (what: string) => v.optional(v.string({ min: 1, max: 64, pattern: ID, description: `stable ${what} id (letters, digits, _ and -); assigned when absent` }));

export const LineInput = v.object({
  id: itemId('line'),
  kind: v.oneOf(LINE_KINDS, { description: 'dialogue (spoken by `character`), action or note' }),
  character: v.optional(v.nullable(v.string({ max: 200, description: 'the speaker; required for dialogue, absent otherwise' }))),
  text: v.string({ max: MAX_TEXT, trim: false }),
});

export const SceneInput = v.object({
  id: itemId('scene'),
  heading: v.optional(v.string({ max: 500, description: 'e.g. "INT. NIGHT TRAIN - CORRIDOR - NIGHT"' })),
  location: v.optional(v.string({ max: 200 })),
  timeOfDay: v.optional(v.string({ max: 50 })),
  lines: v.optional(v.array(LineInput, { max: MAX_LINES_PER_SCENE })),
});

const baseRevision = v.optional(v.int({ min: 0, description: 'the revision the edit started from (0 before the first save); or send If-Match: "<revision>"' }));

export const ScriptSaveBody = v.object({ baseRevision, scenes: v.array(SceneInput, { max: MAX_SCENES }) });
export const RestoreBody = v.object({ baseRevision });

/** A map of attribute name -> text (at most 100 names of up to 100 characters, values up to 2000). */
function attributes(): v.Schema<Record<string, string>> & { optional: false } {
  const json = { type: 'object', additionalProperties: { type: 'string', maxLength: 2000 }, maxProperties: 100 };
  return {
    json, optional: false,
    check(value, path, st) {
      const fail = (p: string, reason: string) => { if (!(p in st.errors)) st.errors[p] = reason; };
      if (typeof value !== 'object' || value === null || Array.isArray(value)) { fail(path, 'must be an object of texts'); return {}; }
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length > 100) { fail(path, 'must have at most 100 attributes'); return {}; }
      const out: Record<string, string> = {};
      for (const [k, val] of entries) {
        if (k.length === 0 || k.length > 100) fail(`${path}.${k}`, 'name must be 1 to 100 characters');
        else if (typeof val !== 'string') fail(`${path}.${k}`, 'must be a string');
        else if (val.length > 2000) fail(`${path}.${k}`, 'must be at most 2000 characters');
        else out[k] = val;
      }
      return out;
    },
  };
}

export const EntryInput = v.object({
  id: itemId('entry'),
  kind: v.oneOf(ENTRY_KINDS),
  name: v.string({ min: 1, max: 200 }),
  description: v.optional(v.string({ max: MAX_TEXT })),
  attributes: v.optional(attributes()),
  referenceAssetIds: v.optional(v.array(v.string({ min: 1, max: 64, pattern: ID }), { max: 100 })),
});

export const BibleSaveBody = v.object({ baseRevision, entries: v.array(EntryInput, { max: MAX_ENTRIES }) });

export const DiffQuery = v.object({
  from: v.optional(v.int({ min: 0, description: 'older revision (0 = the empty document); default: the one before `to`' })),
  to: v.optional(v.int({ min: 0, description: 'newer revision; default: the current one' })),
}, { allowUnknown: true });

export type ScriptSave = v.Infer<typeof ScriptSaveBody>;
export type BibleSave = v.Infer<typeof BibleSaveBody>;
