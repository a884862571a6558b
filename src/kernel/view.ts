// What the API answers, described once. A view is the JSON Schema of a response body and, through
// its type parameter, the TypeScript type of that body: a presenter declares its return type as
// `Out<typeof SomeView>` (so the compiler holds it to the schema) and its route names the view as
// `response.schema` (so the OpenAPI document says the same, and a handler returning something else
// does not type-check). The tests check every body they receive against the served document
// (test/helpers/openapi-check.ts), which catches what types cannot see (a spread carrying an extra field).
// Views given a name with `named` become components/schemas entries, referenced by $ref.
import type { JsonSchema } from './validate.ts';

export interface View<T> {
  readonly json: JsonSchema;
  readonly optional: boolean;
  /** Type only: never set. */
  readonly __type?: (t: T) => T;
}

export type Out<V> = V extends View<infer T> ? T : never;

/**
 * A view of any type, for constraints over several views: View<T> is invariant in T (`__type`), so
 * View<unknown> would accept none of them, and TypeScript has no existential type.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above: the one named `any` view
export type AnyView = View<any>;

type Shape = Record<string, AnyView>;
type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K]['optional'] extends true ? K : never }[keyof S];
type RequiredKeys<S extends Shape> = Exclude<keyof S, OptionalKeys<S>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
export type OutShape<S extends Shape> = Simplify<{ [K in RequiredKeys<S>]: Out<S[K]> } & { [K in OptionalKeys<S>]?: Out<S[K]> }>;

const view = <T>(json: JsonSchema): View<T> & { optional: false } => ({ json, optional: false });
const described = (json: JsonSchema, description?: string): JsonSchema => (description ? { ...json, description } : json);

export type TextFormat = 'date-time' | 'date' | 'uri' | 'email';

/** A string; `format` documents ISO 8601 timestamps (`date-time`), dates, URLs and e-mail addresses. */
export const text = (o: { format?: TextFormat; description?: string } = {}) =>
  view<string>(described({ type: 'string', ...(o.format ? { format: o.format } : {}) }, o.description));

/** An ISO 8601 timestamp as the service writes it (UTC, milliseconds). */
export const time = (description?: string) => text({ format: 'date-time', description });

/** One of fixed strings. */
export const oneOf = <const V extends readonly string[]>(values: V, description?: string) =>
  view<V[number]>(described({ type: 'string', enum: [...values] }, description));

/** A fixed value (a discriminator, `true` in { ok: true }). */
export const constant = <const V extends string | number | boolean>(value: V, description?: string) =>
  view<V>(described({ const: value }, description));

export const int = (description?: string) => view<number>(described({ type: 'integer' }, description));
export const number = (description?: string) => view<number>(described({ type: 'number' }, description));
export const bool = (description?: string) => view<boolean>(described({ type: 'boolean' }, description));

/** Any JSON value (free-form parameters, stored metadata): typed `unknown`. */
export const anything = (description?: string) => view<unknown>(described({}, description));

/** Any JSON object (free-form configuration); `additionalProperties: {}` so generated clients type it as a map of unknown values. */
export const anyObject = (description?: string) => view<Record<string, unknown>>(described({ type: 'object', additionalProperties: {} }, description));

export function nullable<T>(v: View<T>): View<T | null> & { optional: false } {
  const t = v.json.type;
  if (typeof t === 'string' && !('$ref' in v.json) && !('enum' in v.json) && !('const' in v.json)) return view<T | null>({ ...v.json, type: [t, 'null'] });
  return view<T | null>({ anyOf: [v.json, { type: 'null' }] });
}

/** A field kept for older clients (`deprecated: true` in the document). */
export const deprecated = <V extends AnyView>(v: V): V => ({ ...v, json: { ...v.json, deprecated: true } });

/** A field that may be absent (not null: absent). */
export const optional = <T>(v: View<T>): View<T> & { optional: true } => ({ json: v.json, optional: true });

export const array = <T>(item: View<T>, description?: string) => view<T[]>(described({ type: 'array', items: item.json }, description));

/** A map from strings to values of one view. */
export const record = <T>(value: View<T>, description?: string) =>
  view<Record<string, T>>(described({ type: 'object', additionalProperties: value.json }, description));

export type ObjectView<S extends Shape> = View<OutShape<S>> & { optional: false; shape: S };

/** An object with exactly these fields (additionalProperties: false, so the document lists every field). */
export function object<S extends Shape>(shape: S, description?: string): ObjectView<S> {
  const required = Object.entries(shape).filter(([, s]) => !s.optional).map(([k]) => k);
  const json: JsonSchema = described({
    type: 'object',
    properties: Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.json])),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  }, description);
  return { json, optional: false, shape };
}

/** An object view with more fields (a detail answer that adds to the list item). */
export const extend = <S extends Shape, E extends Shape>(base: ObjectView<S>, more: E, description?: string) =>
  object({ ...base.shape, ...more }, description);

/** One of several views (a union; tell them apart by a field). */
export const anyOf = <const V extends readonly AnyView[]>(views: V, description?: string) =>
  view<Out<V[number]>>(described({ anyOf: views.map((v) => v.json) }, description));

const NAMED = new Map<string, JsonSchema>();

/** A view listed once under components/schemas and referenced by $ref wherever it is used. */
export function named<V extends AnyView>(name: string, v: V): V {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new Error(`view name ${name}: use PascalCase`);
  if (NAMED.has(name) && NAMED.get(name) !== v.json) throw new Error(`view name ${name} is used twice`);
  NAMED.set(name, v.json);
  return { ...v, json: { $ref: `#/components/schemas/${name}` } };
}

const REF = /"#\/components\/schemas\/([A-Za-z0-9]+)"/g;

/** The named views that `root` refers to, directly or through other named views (components/schemas of the OpenAPI document). */
export function namedViews(root: unknown): Record<string, JsonSchema> {
  const found = new Map<string, JsonSchema>();
  const pending = [JSON.stringify(root)];
  while (pending.length) {
    for (const [, name] of pending.pop()!.matchAll(REF)) {
      const json = NAMED.get(name);
      if (!json || found.has(name)) continue;
      found.set(name, json);
      pending.push(JSON.stringify(json));
    }
  }
  return Object.fromEntries([...found].sort(([a], [b]) => a.localeCompare(b)));
}

export const Pagination = named('Pagination', object({
  page: int('the page, from 1'),
  pageSize: int('items per page'),
  total: int('items in all pages'),
}));

/** The list answer: { items, pagination }. */
export const page = <T>(item: View<T>, description?: string) => object({ items: array(item), pagination: Pagination }, description);

/** { ok: true } answers. */
export const Ok = named('Ok', object({ ok: constant(true) }));
