// Unit tests of newId (src/kernel/ids.ts): prefix + 26 Crockford base32 characters holding 48 bits of
// milliseconds and 80 random bits, strictly increasing within a process (ULID-style: within a
// millisecond, or when the clock goes back, the random part grows by 1 + a fresh 32-bit random amount;
// a carry out of the 80 bits bumps the time part). Ids are compared as strings: that is how SQL orders them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idSource, newId } from '../../src/kernel/ids.ts';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const SHAPE = /^usr_[0-9a-hjkmnp-tv-z]{26}$/;
const RANDOM_BITS = 80n;

/** The 128 bits of an id (26 characters of 5 bits, the last 2 bits padding). */
function decode(id: string): { ms: number; random: bigint } {
  let v = 0n;
  for (const c of id.slice(id.indexOf('_') + 1)) v = (v << 5n) | BigInt(ALPHABET.indexOf(c));
  v >>= 2n;
  return { ms: Number(v >> RANDOM_BITS), random: v & ((1n << RANDOM_BITS) - 1n) };
}

/** A fake CSPRNG that fills with one byte. */
const filler = (byte: number) => (buf: Buffer, offset: number, length: number) => { buf.fill(byte, offset, offset + length); };

test('100k ids in a tight loop are strictly increasing, each the prefix and 26 base32 characters', () => {
  const ids: string[] = [];
  for (let i = 0; i < 100_000; i++) ids.push(newId('usr'));
  for (let i = 0; i < ids.length; i++) {
    assert.match(ids[i], SHAPE);
    if (i > 0) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]} (at ${i})`);
  }
  assert.equal(new Set(ids).size, ids.length);
  // The time part is the clock's millisecond (never behind it; ahead only after a carry, by 1 ms at most here).
  const t = decode(ids.at(-1)!).ms;
  assert.ok(t <= Date.now() + 1 && t > Date.now() - 60_000, `time part ${t} is now`);
});

test('within a millisecond the random part grows by 1 .. 2^32, so a successor is not the predecessor + 1', () => {
  const ids: string[] = [];
  for (let i = 0; i < 100_000; i++) ids.push(newId('usr'));
  let sameMs = 0;
  let lastCharOnly = 0;
  let sum = 0n;
  for (let i = 1; i < ids.length; i++) {
    const a = decode(ids[i - 1]);
    const b = decode(ids[i]);
    if (a.ms !== b.ms) continue;
    sameMs++;
    const step = b.random - a.random;
    assert.ok(step >= 1n && step <= 2n ** 32n, `step ${step} at ${i}`);
    sum += step;
    // The last character holds only 3 bits: a step that changes nothing before it is a step of at most 7.
    if (ids[i - 1].slice(0, -1) === ids[i].slice(0, -1)) lastCharOnly++;
  }
  assert.ok(sameMs >= 1000, `${sameMs} successive ids shared a millisecond`);
  // 1 + a uniform 32-bit amount averages 2^31; a +1 counter would average 1.
  const mean = Number(sum / BigInt(sameMs));
  assert.ok(mean > 2 ** 30 && mean < 2 ** 32, `mean step ${mean}`);
  // P(step <= 7) is 2^-29 per pair: one such pair in 100k is already unlikely, two would mean a counter.
  assert.ok(lastCharOnly <= 1, `${lastCharOnly} successive ids differed in the last character only`);
});

test('a fresh millisecond draws a fresh random part; a clock that stops or goes back keeps the last millisecond and grows', () => {
  let now = 1_700_000_000_000;
  let byte = 0x10;
  const next = idSource(() => now, (buf, offset, length) => { buf.fill(byte, offset, offset + length); });
  const a = next('usr');
  assert.deepEqual(decode(a), { ms: now, random: BigInt(`0x${'10'.repeat(10)}`) });
  const b = next('usr'); // same millisecond: + 1 + 0x10101010
  assert.deepEqual(decode(b), { ms: now, random: decode(a).random + 1n + 0x10101010n });
  now -= 5_000; // the clock goes back 5 s
  byte = 0;
  const c = next('usr'); // + 1 + 0
  assert.deepEqual(decode(c), { ms: now + 5_000, random: decode(b).random + 1n });
  assert.ok(a < b && b < c);
  now += 5_001; // past the last millisecond again: a fresh draw
  byte = 0x01;
  const d = next('usr');
  assert.deepEqual(decode(d), { ms: now, random: BigInt(`0x${'01'.repeat(10)}`) });
  assert.ok(c < d);
  for (const id of [a, b, c, d]) assert.match(id, SHAPE);
});

test('a carry out of the 80 random bits bumps the time part by 1 ms and draws a fresh random part', () => {
  const now = 1_700_000_000_000;
  let fill = filler(0xff);
  const next = idSource(() => now, (buf, offset, length) => fill(buf, offset, length));
  const top = next('usr'); // random part 2^80 - 1
  assert.deepEqual(decode(top), { ms: now, random: (1n << 80n) - 1n });
  fill = filler(0x00);
  const bumped = next('usr'); // + 1 carries out: the next millisecond, random part drawn again (zeros)
  assert.deepEqual(decode(bumped), { ms: now + 1, random: 0n });
  assert.ok(top < bumped);
  assert.match(bumped, SHAPE);
  // The clock is still behind the bumped millisecond: the ids keep growing from it.
  fill = filler(0x02);
  const after = next('usr');
  assert.deepEqual(decode(after), { ms: now + 1, random: 1n + 0x02020202n });
  assert.ok(bumped < after);
  // A carry through several bytes: 0x0000000000_00ffffffff + 1 + 0xffffffff = 0x0000000000_01ffffffff.
  const low = Buffer.from('000000000000ffffffff', 'hex');
  const carry = idSource(() => now, (buf, offset, length) => { if (length === 10) low.copy(buf, offset); else buf.fill(0xff, offset, offset + length); });
  const x = carry('usr');
  const y = carry('usr');
  assert.deepEqual(decode(y), { ms: now, random: 0x1ffffffffn });
  assert.ok(x < y);
});

test('ids of different sources are independent; the alphabet order is the byte order', () => {
  const sorted = [...ALPHABET].sort().join('');
  assert.equal(sorted, ALPHABET);
  const s1 = idSource();
  const s2 = idSource();
  assert.notEqual(s1('org'), s2('org'));
});
