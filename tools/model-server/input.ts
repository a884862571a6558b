// Body field readers shared by the three protocols: each returns the typed value or throws 422
// naming the field, so handlers read as a list of fields.
import { invalid } from './http.ts';
import type { Size } from './scenes.ts';

export type Body = Record<string, unknown>;

const MAX_TEXT = 32_000;
export const SIZE_LIMITS = { min: 16, max: 2048 } as const;

export function isRecord(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function optionalString(body: Body, key: string, max = MAX_TEXT): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalid(`"${key}" must be a string`);
  if (v.length > max) throw invalid(`"${key}" must be at most ${max} characters`);
  return v;
}

export function requiredString(body: Body, key: string, max = MAX_TEXT): string {
  const v = optionalString(body, key, max);
  if (v === undefined || v.trim() === '') throw invalid(`"${key}" is required`);
  return v;
}

/** A number, or a string holding one (OpenAI's video API sends seconds as "4"). */
export function optionalNumber(body: Body, key: string, min: number, max: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max) throw invalid(`"${key}" must be a number from ${min} to ${max}`);
  return n;
}

export function optionalInt(body: Body, key: string, min: number, max: number): number | undefined {
  const n = optionalNumber(body, key, min, max);
  if (n !== undefined && !Number.isInteger(n)) throw invalid(`"${key}" must be an integer from ${min} to ${max}`);
  return n;
}

export function optionalBool(body: Body, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalid(`"${key}" must be true or false`);
  return v;
}

export function optionalEnum<T extends string>(body: Body, key: string, values: readonly T[]): T | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !values.includes(v as T)) throw invalid(`"${key}" must be one of ${values.join(', ')}`);
  return v as T;
}

export function requiredRecord(body: Body, key: string): Body {
  const v = body[key];
  if (!isRecord(v)) throw invalid(`"${key}" must be an object`);
  return v;
}

/** Refuses fields a route does not know (a typo in a fault control must not pass silently). */
export function onlyFields(body: Body, known: readonly string[]): void {
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length) throw invalid(`unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
}

/**
 * "WxH" (both 16..2048), or the fallback when absent or "auto" (as OpenAI's image API allows). Videos pass even=true: H.264 in yuv420p
 * needs even dimensions, so odd ones are rounded down rather than refused.
 */
export function parseSize(value: unknown, key: string, fallback: Size, even = false): Size {
  if (value === undefined || value === null || value === 'auto') return fallback;
  const m = typeof value === 'string' ? /^(\d{1,5})x(\d{1,5})$/.exec(value.trim()) : null;
  const width = m ? Number(m[1]) : NaN;
  const height = m ? Number(m[2]) : NaN;
  const ok = (n: number) => n >= SIZE_LIMITS.min && n <= SIZE_LIMITS.max;
  if (!ok(width) || !ok(height)) throw invalid(`"${key}" must be "WIDTHxHEIGHT", each ${SIZE_LIMITS.min} to ${SIZE_LIMITS.max}`);
  return even ? { width: width & ~1, height: height & ~1 } : { width, height };
}
