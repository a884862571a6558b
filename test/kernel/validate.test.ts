// The schema language: typed parsing, every bad field named, JSON Schema for the OpenAPI document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as v from '../../src/kernel/validate.ts';
import { AppError } from '../../src/kernel/errors.ts';

const fieldsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AppError && e.status === 422 && e.code === 'validation_failed');
    return e.details!.fields as Record<string, string>;
  }
  assert.fail('expected validation_failed');
};

const Shape = v.object({
  name: v.string({ min: 1, max: 5 }),
  kind: v.oneOf(['image', 'video'] as const),
  count: v.optional(v.int({ min: 1, max: 10 })),
  ratio: v.optional(v.number({ min: 0, max: 1 })),
  tags: v.optional(v.array(v.string({ max: 3 }), { max: 2 })),
  due: v.optional(v.nullable(v.string({ format: 'date' }))),
  on: v.optional(v.boolean()),
});

test('valid input parses to the typed value, strings trimmed', () => {
  const out = v.parse(Shape, { name: ' ab ', kind: 'video', count: 3, ratio: 0.5, tags: ['x'], due: null, on: true });
  assert.deepEqual(out, { name: 'ab', kind: 'video', count: 3, ratio: 0.5, tags: ['x'], due: null, on: true });
});

test('every bad field is named at once', () => {
  const fields = fieldsOf(() => v.parse(Shape, { name: '', kind: 'audio', count: 1.5, ratio: 2, tags: ['long!', 'a', 'b'], due: '2026-02-30', on: 'yes', other: 1 }));
  assert.deepEqual(fields, {
    name: 'must not be empty',
    kind: 'must be one of image, video',
    count: 'must be an integer',
    ratio: 'must be at most 1',
    tags: 'must have at most 2 items',
    due: 'must be a date YYYY-MM-DD',
    on: 'must be true or false',
    other: 'is not a known field',
  });
  assert.deepEqual(fieldsOf(() => v.parse(Shape, [])), { body: 'must be an object' });
  assert.deepEqual(fieldsOf(() => v.parse(Shape, { kind: 'image', tags: ['toolong'] })), { name: 'is required', 'tags[0]': 'must be at most 3 characters' });
});

test('query strings coerce numbers and booleans', () => {
  const Q = v.object({ limit: v.optional(v.int({ min: 1 })), unreadOnly: v.optional(v.boolean()) }, { allowUnknown: true });
  assert.deepEqual(v.parse(Q, { limit: '20', unreadOnly: '1', x: 'y' }, true), { limit: 20, unreadOnly: true });
  assert.deepEqual(fieldsOf(() => v.parse(Q, { limit: 'abc' }, true)), { limit: 'must be an integer' });
  assert.deepEqual(fieldsOf(() => v.parse(Q, { limit: '20' })), { limit: 'must be an integer' }, 'no coercion for bodies');
});

test('schemas describe themselves as JSON Schema', () => {
  assert.deepEqual(Shape.json.required, ['name', 'kind']);
  assert.equal(Shape.json.additionalProperties, false);
  assert.deepEqual((Shape.json.properties as any).kind, { type: 'string', enum: ['image', 'video'] });
  assert.deepEqual((Shape.json.properties as any).due, { anyOf: [{ type: 'string', maxLength: 10000, format: 'date' }, { type: 'null' }] });
});

test('paging clamps pageSize to 1..200 and page to 1..', () => {
  assert.deepEqual(v.paging(new URLSearchParams('')), { page: 1, pageSize: 50, offset: 0 });
  assert.deepEqual(v.paging(new URLSearchParams('page=3&pageSize=1000')), { page: 3, pageSize: 200, offset: 400 });
  assert.deepEqual(v.paging(new URLSearchParams('page=0&pageSize=0')), { page: 1, pageSize: 1, offset: 0 });
  assert.deepEqual(v.paging(new URLSearchParams('page=x&pageSize=-5')), { page: 1, pageSize: 1, offset: 0 });
});

test('a string holding U+0000 is refused, trimmed or not, naming the field', () => {
  const schema = v.object({ name: v.string(), raw: v.optional(v.string({ trim: false })) });
  assert.deepEqual(fieldsOf(() => v.parse(schema, { name: 'a\u0000b', raw: '\u0000' })), {
    name: 'must not contain the NUL character (U+0000)', raw: 'must not contain the NUL character (U+0000)',
  });
  assert.deepEqual(v.parse(schema, { name: ' ok ' }), { name: 'ok' });
  // A value its handler refuses more precisely (a file path: unsafe_path) may let it through.
  assert.deepEqual(v.parse(v.object({ p: v.string({ trim: false, allowNul: true }) }), { p: 'a\u0000' }), { p: 'a\u0000' });
});

test('free-form JSON holding U+0000 in a string or a key, at any depth, is refused naming the field', () => {
  const schema = v.object({ parameters: v.anyObject() });
  const reason = { parameters: 'must not contain the NUL character (U+0000) in any key or string' };
  for (const parameters of [{ a: 'x\u0000' }, { ['k\u0000']: 1 }, { a: [1, { b: ['ok', '\u0000'] }] }]) {
    assert.deepEqual(fieldsOf(() => v.parse(schema, { parameters })), reason);
  }
  const fine = { a: 'x\\u0000', b: [1, null, true, { c: 'd' }], 'e\u0001': '' };
  assert.deepEqual(v.parse(schema, { parameters: fine }), { parameters: fine });
  assert.equal(v.jsonHoldsNul(['a', { b: { c: ['\u0000'] } }]), true);
  assert.equal(v.jsonHoldsNul({ a: 1, b: [null, 'x'] }), false);
});
