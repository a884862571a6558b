// Partial representations (RFC 7644 section 3.9): the `attributes` and `excludedAttributes` query
// parameters of every request that answers Users (GET one, list and filter, POST, PUT, PATCH).
// Comma-separated attribute paths in the notation of section 3.10: `userName`, `name.givenName`,
// `emails.value`, `meta.location`, with or without the core User schema URN, in any case. `id` and
// `schemas` are always returned; `attributes` returns them and the attributes (or sub-attributes)
// named, `excludedAttributes` everything else. A complex attribute left without sub-attributes is
// left out, and so is an entry of a multi-valued one. Names of attributes the service does not keep
// (an extension's, `title`, ...) select nothing; both parameters at once are 400 invalidValue.
import { invalidValue } from './errors.ts';
import { stripCoreUrn } from './filter.ts';

/** Attributes whose `returned` is "always" (RFC 7643 section 7): never dropped. */
const ALWAYS = new Set(['id', 'schemas']);
const MAX_LENGTH = 2000;
const PATH = /^([A-Za-z][\w$-]*)(?:\.([A-Za-z][\w$-]*))?$/;

type Json = Record<string, unknown>;
/** Lower-cased attribute name -> null (the whole attribute) or the lower-cased sub-attributes named. */
type Selection = Map<string, Set<string> | null>;
export type Projection = (resource: Json) => Json;

function parseList(text: string, param: string): Selection {
  if (text.length > MAX_LENGTH) throw invalidValue(`${param} has at most ${MAX_LENGTH} characters`);
  const out: Selection = new Map();
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const path = stripCoreUrn(item);
    if (/^urn:/i.test(path)) continue; // an extension's attribute: the service keeps none
    const m = PATH.exec(path);
    if (!m) throw invalidValue(`${param}: "${item.slice(0, 100)}" is not an attribute path (attribute or attribute.subAttribute)`);
    const attr = m[1].toLowerCase();
    const sub = m[2]?.toLowerCase();
    const had = out.get(attr);
    if (had === null) continue;
    if (sub === undefined) out.set(attr, null);
    else out.set(attr, new Set([...(had ?? []), sub]));
  }
  return out;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The members of a complex value kept by `keep(subName)`; undefined when none is left. */
function subset(value: unknown, keep: (sub: string) => boolean): unknown {
  const one = (v: unknown): Json | undefined => {
    if (!isObject(v)) return undefined;
    const kept = Object.entries(v).filter(([k]) => keep(k.toLowerCase()));
    return kept.length ? Object.fromEntries(kept) : undefined;
  };
  if (Array.isArray(value)) {
    const items = value.map(one).filter((x) => x !== undefined);
    return items.length ? items : undefined;
  }
  return one(value);
}

function include(resource: Json, wanted: Selection): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(resource)) {
    const k = key.toLowerCase();
    if (ALWAYS.has(k)) { out[key] = value; continue; }
    if (!wanted.has(k)) continue;
    const subs = wanted.get(k);
    const v = subs ? subset(value, (s) => subs.has(s)) : value;
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function exclude(resource: Json, unwanted: Selection): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(resource)) {
    const k = key.toLowerCase();
    if (ALWAYS.has(k) || !unwanted.has(k)) { out[key] = value; continue; }
    const subs = unwanted.get(k);
    if (!subs) continue;
    const v = subset(value, (s) => !subs.has(s));
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * The projection the request's query asks for (the identity when it names none). Parsed before the
 * request does anything, so a malformed parameter changes nothing.
 */
export function projectionOf(sp: URLSearchParams): Projection {
  const attributes = sp.get('attributes');
  const excluded = sp.get('excludedAttributes');
  const given = (x: string | null): x is string => x !== null && x.trim() !== '';
  if (given(attributes) && given(excluded)) throw invalidValue('attributes and excludedAttributes are mutually exclusive');
  if (given(attributes)) {
    const wanted = parseList(attributes, 'attributes');
    return (r) => include(r, wanted);
  }
  if (given(excluded)) {
    const unwanted = parseList(excluded, 'excludedAttributes');
    return (r) => exclude(r, unwanted);
  }
  return (r) => r;
}
