// A small schema language: each schema checks input (collecting every field error for one 422
// `validation_failed` answer), gives the typed result, and describes itself as JSON Schema for the
// OpenAPI document. Query strings use the same schemas with coercion of numbers and booleans.
import { validationFailed } from './errors.ts';

export type JsonSchema = Record<string, unknown>;

interface ParseState { errors: Record<string, string>; coerce: boolean }

export interface Schema<T> {
  readonly json: JsonSchema;
  readonly optional: boolean;
  check(value: unknown, path: string, st: ParseState): T;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K]['optional'] extends true ? K : never }[keyof S];
type RequiredKeys<S extends Shape> = Exclude<keyof S, OptionalKeys<S>>;
export type InferShape<S extends Shape> =
  { [K in RequiredKeys<S>]: Infer<S[K]> } & { [K in OptionalKeys<S>]?: Infer<S[K]> };

function fail(st: ParseState, path: string, reason: string): void {
  if (!(path in st.errors)) st.errors[path || 'body'] = reason;
}

function make<T>(json: JsonSchema, check: (value: unknown, path: string, st: ParseState) => T): Schema<T> & { optional: false } {
  return { json, optional: false, check };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface StringOpts {
  min?: number; max?: number; pattern?: RegExp; format?: 'email' | 'date' | 'uri'; trim?: boolean; description?: string;
  /** Let U+0000 through, for a value never stored that its handler refuses with a more precise error (a file path: unsafe_path). */
  allowNul?: boolean;
}

export function string(o: StringOpts = {}) {
  const max = o.max ?? 10_000;
  const json: JsonSchema = { type: 'string', maxLength: max };
  if (o.min !== undefined) json.minLength = o.min;
  if (o.pattern) json.pattern = o.pattern.source;
  if (o.format) json.format = o.format;
  if (o.description) json.description = o.description;
  return make<string>(json, (value, path, st) => {
    if (typeof value !== 'string') { fail(st, path, 'must be a string'); return ''; }
    const s = o.trim === false ? value : value.trim();
    // No text the service keeps may hold U+0000: PostgreSQL's text type refuses it (SQLite would keep it).
    if (!o.allowNul && s.includes('\u0000')) fail(st, path, 'must not contain the NUL character (U+0000)');
    else if (o.min !== undefined && s.length < o.min) fail(st, path, o.min === 1 ? 'must not be empty' : `must be at least ${o.min} characters`);
    else if (s.length > max) fail(st, path, `must be at most ${max} characters`);
    else if (o.pattern && !o.pattern.test(s)) fail(st, path, 'has an invalid format');
    else if (o.format === 'email' && !EMAIL.test(s)) fail(st, path, 'must be an e-mail address');
    else if (o.format === 'date' && !isDate(s)) fail(st, path, 'must be a date YYYY-MM-DD');
    else if (o.format === 'uri' && !URL.canParse(s)) fail(st, path, 'must be an absolute URL');
    return s;
  });
}

function isDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
}

/**
 * Every integer is a safe integer (|n| <= 2^53 - 1): a larger one is not exact in JSON or in JavaScript
 * and, multiplied into a page offset, is out of SQLite's 64-bit range. The bounds are in the JSON Schema.
 */
export const MAX_INT = Number.MAX_SAFE_INTEGER;

function numeric(integer: boolean, o: { min?: number; max?: number; description?: string }) {
  const json: JsonSchema = { type: integer ? 'integer' : 'number' };
  const min = o.min ?? (integer ? -MAX_INT : undefined);
  const max = o.max ?? (integer ? MAX_INT : undefined);
  if (min !== undefined) json.minimum = min;
  if (max !== undefined) json.maximum = max;
  if (o.description) json.description = o.description;
  return make<number>(json, (value, path, st) => {
    let n = value;
    if (st.coerce && typeof value === 'string' && value.trim() !== '') n = Number(value);
    if (typeof n !== 'number' || !Number.isFinite(n)) { fail(st, path, `must be ${integer ? 'an integer' : 'a number'}`); return 0; }
    if (integer && !Number.isInteger(n)) { fail(st, path, 'must be an integer'); return 0; }
    if (integer && !Number.isSafeInteger(n)) { fail(st, path, `must be an integer between ${min} and ${max}`); return 0; }
    if (min !== undefined && n < min) fail(st, path, `must be at least ${min}`);
    else if (max !== undefined && n > max) fail(st, path, `must be at most ${max}`);
    return n;
  });
}

export const int = (o: { min?: number; max?: number; description?: string } = {}) => numeric(true, o);
export const number = (o: { min?: number; max?: number; description?: string } = {}) => numeric(false, o);

export function boolean(o: { description?: string } = {}) {
  return make<boolean>({ type: 'boolean', ...(o.description ? { description: o.description } : {}) }, (value, path, st) => {
    if (st.coerce && typeof value === 'string') {
      if (value === '1' || value === 'true') return true;
      if (value === '0' || value === 'false') return false;
    }
    if (typeof value !== 'boolean') { fail(st, path, 'must be true or false'); return false; }
    return value;
  });
}

export function oneOf<const V extends readonly string[]>(values: V, o: { description?: string } = {}) {
  return make<V[number]>({ type: 'string', enum: [...values], ...(o.description ? { description: o.description } : {}) }, (value, path, st) => {
    if (typeof value !== 'string' || !values.includes(value)) { fail(st, path, `must be one of ${values.join(', ')}`); return values[0]; }
    return value;
  });
}

export function array<T>(item: Schema<T>, o: { min?: number; max?: number } = {}) {
  const max = o.max ?? 1000;
  return make<T[]>({ type: 'array', items: item.json, maxItems: max, ...(o.min !== undefined ? { minItems: o.min } : {}) }, (value, path, st) => {
    if (!Array.isArray(value)) { fail(st, path, 'must be an array'); return []; }
    if (o.min !== undefined && value.length < o.min) fail(st, path, `must have at least ${o.min} items`);
    if (value.length > max) { fail(st, path, `must have at most ${max} items`); return []; }
    return value.map((v, i) => item.check(v, `${path}[${i}]`, st));
  });
}

export function object<S extends Shape>(shape: S, o: { description?: string; allowUnknown?: boolean } = {}) {
  const required = Object.entries(shape).filter(([, s]) => !s.optional).map(([k]) => k);
  const json: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.json])),
    ...(required.length ? { required } : {}),
    ...(o.allowUnknown ? {} : { additionalProperties: false }),
    ...(o.description ? { description: o.description } : {}),
  };
  const schema = make<InferShape<S>>(json, (value, path, st) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      fail(st, path, 'must be an object');
      return {} as InferShape<S>;
    }
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, s] of Object.entries(shape)) {
      const p = path ? `${path}.${k}` : k;
      if (input[k] === undefined) {
        if (!s.optional) fail(st, p, 'is required');
        continue;
      }
      out[k] = s.check(input[k], p, st);
    }
    if (!o.allowUnknown) {
      for (const k of Object.keys(input)) if (!(k in shape)) fail(st, path ? `${path}.${k}` : k, 'is not a known field');
    }
    return out as InferShape<S>;
  });
  return Object.assign(schema, { shape });
}

/**
 * Free-form JSON (job and template parameters, a ComfyUI workflow, a provider's configuration) is kept
 * as given, so one limit applies to all of it: at most JSON_MAX_DEPTH levels of objects and arrays and
 * at most JSON_MAX_VALUES values in all. Beyond either it is 422 naming the field, before anything is
 * stored or serialized (JSON.stringify of 10,000 levels overflows the stack).
 */
export const JSON_MAX_DEPTH = 32;
export const JSON_MAX_VALUES = 10_000;

/**
 * How a JSON value exceeds the limits, or null: an iterative walk (no recursion, whatever the depth)
 * that stops at the first excess. The value itself counts as depth 1 when it is an object or array.
 */
export function jsonExcess(value: unknown, maxDepth = JSON_MAX_DEPTH, maxValues = JSON_MAX_VALUES): { depth: true; path: string[] } | { values: true } | null {
  // parallel stacks (no allocation per value); only the first step of the path is kept, enough to name the field
  const values: unknown[] = [value];
  const depths: number[] = [0];
  const tops: Array<string | null> = [null];
  let count = 0;
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop()!;
    const top = tops.pop()!;
    if (++count > maxValues) return { values: true };
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= maxDepth) return { depth: true, path: top === null ? [] : [top] };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'object' && x !== null) { values.push(x); depths.push(depth + 1); tops.push(top ?? `[${i}]`); } else if (++count > maxValues) return { values: true };
      }
    } else {
      for (const k in v) {
        const x: unknown = (v as Record<string, unknown>)[k];
        if (typeof x === 'object' && x !== null) { values.push(x); depths.push(depth + 1); tops.push(top ?? k); } else if (++count > maxValues) return { values: true };
      }
    }
  }
  return null;
}

/**
 * True when a JSON value holds U+0000 in a string or an object key: kept as JSON text, PostgreSQL could
 * store it but not read it as jsonb, so free-form JSON refuses it as every validated string does. An
 * iterative walk (call it within the limits, so it ends soon).
 */
export function jsonHoldsNul(value: unknown): boolean {
  const values: unknown[] = [value];
  while (values.length > 0) {
    const v = values.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (Array.isArray(v)) {
      values.push(...(v as unknown[]));
    } else if (typeof v === 'object' && v !== null) {
      for (const k in v) {
        if (k.includes('\u0000')) return true;
        values.push((v as Record<string, unknown>)[k]);
      }
    }
  }
  return false;
}

/** The free-form limits checked on a value at `path`; true when it is within them. */
function withinJsonLimits(value: unknown, path: string, st: ParseState): boolean {
  const excess = jsonExcess(value);
  if (!excess) return true;
  fail(st, path, 'depth' in excess ? `must not nest objects and arrays more than ${JSON_MAX_DEPTH} levels deep` : `must hold at most ${JSON_MAX_VALUES} values in all`);
  return false;
}

/**
 * Any JSON object (free-form parameters), kept as given: at most `maxKeys` top-level keys, and the
 * free-form limits (JSON_MAX_DEPTH levels, JSON_MAX_VALUES values).
 */
export function anyObject(o: { maxKeys?: number; description?: string } = {}) {
  const max = o.maxKeys ?? 100;
  const limits = `at most ${max} keys, nested at most ${JSON_MAX_DEPTH} levels deep, at most ${JSON_MAX_VALUES} values in all`;
  const description = o.description ? `${o.description} (${limits})` : `free-form JSON object (${limits})`;
  return make<Record<string, unknown>>({ type: 'object', maxProperties: max, description }, (value, path, st) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) { fail(st, path, 'must be an object'); return {}; }
    if (Object.keys(value).length > max) { fail(st, path, `must have at most ${max} keys`); return {}; }
    if (!withinJsonLimits(value, path, st)) return {};
    if (jsonHoldsNul(value)) { fail(st, path, 'must not contain the NUL character (U+0000) in any key or string'); return {}; }
    return value as Record<string, unknown>;
  });
}

export function optional<T>(s: Schema<T>): Schema<T | undefined> & { optional: true } {
  return { json: s.json, optional: true, check: (v, p, st) => (v === undefined ? undefined : s.check(v, p, st)) };
}

export function nullable<T>(s: Schema<T>): Schema<T | null> & { optional: false } {
  return make<T | null>({ anyOf: [s.json, { type: 'null' }] }, (v, p, st) => (v === null ? null : s.check(v, p, st)));
}

/** Parses a JSON body (or query object with coerce) or throws 422 validation_failed naming every bad field. */
export function parse<T>(schema: Schema<T>, input: unknown, coerce = false): T {
  const st: ParseState = { errors: {}, coerce };
  const value = schema.check(input, '', st);
  if (Object.keys(st.errors).length > 0) throw validationFailed(st.errors);
  return value;
}

/** The contract's list query: page from 1, pageSize default 50 clamped to 1..200. */
export const PageQuery = object({
  page: optional(int({ description: 'page number from 1; a page past the end is an empty page' })),
  pageSize: optional(int({ description: 'items per page, default 50, clamped to 1..200' })),
}, { allowUnknown: true });

/** The last page number a window reaches: its offset stays a safe integer (an empty page beyond). */
export const MAX_PAGE = Math.floor(MAX_INT / 200);

/**
 * The contract's page window: page from 1 (clamped to 1..MAX_PAGE, so the offset handed to SQL is
 * always an exact integer; a page past the end is an empty page), page size default 50 clamped to 1..200.
 */
export function pageWindow(page?: number, pageSize?: number): { page: number; pageSize: number; offset: number } {
  const p = Math.min(MAX_PAGE, Math.max(1, Math.trunc(Number.isFinite(page) ? page! : 1)));
  const size = Math.min(200, Math.max(1, Math.trunc(Number.isFinite(pageSize) ? pageSize! : 50)));
  return { page: p, pageSize: size, offset: (p - 1) * size };
}

/** Standard list paging from a query string (unparsable values fall back to the defaults). */
export function paging(query: URLSearchParams): { page: number; pageSize: number; offset: number } {
  return pageWindow(clampInt(query.get('page'), 1, 1, Number.MAX_SAFE_INTEGER), clampInt(query.get('pageSize'), 50, 1, 200));
}

/** A numeric query value clamped into [min, max]; missing or unparsable gives the default. */
export function clampInt(raw: string | null, dflt: number, min: number, max: number): number {
  if (raw === null || raw.trim() === '' || !/^-?\d+$/.test(raw.trim())) return dflt;
  return Math.min(max, Math.max(min, Number(raw)));
}

/** Pages an already visibility-filtered list: { items, pagination }. */
export function pageOf<T, U>(searchParams: URLSearchParams, rows: readonly T[], present: (row: T) => U) {
  const { page, pageSize, offset } = paging(searchParams);
  return { items: rows.slice(offset, offset + pageSize).map(present), pagination: { page, pageSize, total: rows.length } };
}
