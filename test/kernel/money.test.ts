// Unit tests of money.ts (exact minor units, e4 unit prices, half-up rounding once, tax on the
// unrounded subtotal) and periods.ts (local dates and billing periods in an organization's zone,
// across DST changes and a skipped midnight). Every expected value is worked out by hand in the comment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addExact, exactToDecimal, exponentOf, formatAmount, formatE4Amount, formatUnitPrice, isCurrency, lineAmount, parseAmount, parseRate,
  parseUnitPrice, roundExact, roundHalfUp, taxOn,
} from '../../src/kernel/money.ts';
import { billingPeriod, isTimeZone, localDate, localDaysBefore, monthOf, startOfLocalDay } from '../../src/kernel/periods.ts';
import { openDb } from '../../src/db/db.ts';

const GIB = 2n ** 30n;
const HOUR = 3_600_000;

test('formatAmount writes minor units with exactly the currency\'s decimals (USD 2, JPY 0, KWD 3)', () => {
  assert.equal(exponentOf('USD'), 2);
  assert.equal(exponentOf('JPY'), 0);
  assert.equal(exponentOf('KWD'), 3);
  assert.equal(formatAmount(1250, 'USD'), '12.50');
  assert.equal(formatAmount(5n, 'USD'), '0.05');
  assert.equal(formatAmount(0, 'USD'), '0.00');
  assert.equal(formatAmount(-5, 'USD'), '-0.05');
  assert.equal(formatAmount(1500, 'JPY'), '1500');
  assert.equal(formatAmount(1250, 'KWD'), '1.250'); // 1250 fils
  assert.equal(formatAmount(1, 'KWD'), '0.001');
  assert.throws(() => formatAmount(1, 'XXX'), RangeError);
  assert.equal(isCurrency('USD'), true);
  assert.equal(isCurrency('usd'), false);
  assert.equal(isCurrency('XXX'), false);
});

test('parseAmount reads major-unit decimal strings; more decimals than the currency, or not a plain decimal, is null', () => {
  assert.equal(parseAmount('12.5', 'USD'), 1250n);
  assert.equal(parseAmount('12.50', 'USD'), 1250n);
  assert.equal(parseAmount('12.500', 'USD'), 1250n); // extra zeros change nothing
  assert.equal(parseAmount('-3.10', 'USD'), -310n);
  assert.equal(parseAmount(' 7 ', 'USD'), 700n);
  assert.equal(parseAmount('1500', 'JPY'), 1500n);
  assert.equal(parseAmount('1500.0', 'JPY'), 1500n);
  assert.equal(parseAmount('1.234', 'KWD'), 1234n);
  for (const [text, currency] of [
    ['12.505', 'USD'], ['1.5', 'JPY'], ['1.2345', 'KWD'], ['1e3', 'USD'], ['.5', 'USD'], ['1.', 'USD'], ['+1', 'USD'], ['', 'USD'],
    ['abc', 'USD'], ['1,000', 'USD'], ['0x10', 'USD'], ['1 000', 'USD'], ['--1', 'USD'], ['Infinity', 'USD'], ['NaN', 'JPY'],
  ] as const) {
    assert.equal(parseAmount(text, currency), null, `${text} ${currency}`);
  }
});

test('unit prices carry four more decimals than the currency (e4 of a minor unit), trailing extra zeros dropped', () => {
  // USD 0.0125 = 1.25 cents = 12,500 e4
  assert.equal(parseUnitPrice('0.0125', 'USD'), 12_500n);
  assert.equal(formatUnitPrice(12_500, 'USD'), '0.0125');
  assert.equal(parseUnitPrice('0.000001', 'USD'), 1n); // 2 + 4 decimals
  assert.equal(parseUnitPrice('0.0000001', 'USD'), null);
  assert.equal(formatUnitPrice(25_000, 'USD'), '0.025');
  assert.equal(formatUnitPrice(10_000, 'USD'), '0.01');
  assert.equal(formatUnitPrice(2_500_000n, 'USD'), '2.50'); // never fewer than the currency's decimals
  assert.equal(formatUnitPrice(0, 'USD'), '0.00');
  // JPY 1.2345 yen = 12,345 e4
  assert.equal(parseUnitPrice('1.2345', 'JPY'), 12_345n);
  assert.equal(formatUnitPrice(12_345, 'JPY'), '1.2345');
  assert.equal(formatUnitPrice(10_000, 'JPY'), '1');
  assert.equal(formatUnitPrice(0, 'JPY'), '0');
  assert.equal(parseUnitPrice('0.00001', 'JPY'), null);
  // KWD 0.0000005 = 0.0005 fils = 5 e4
  assert.equal(parseUnitPrice('0.0000005', 'KWD'), 5n);
  assert.equal(formatUnitPrice(5, 'KWD'), '0.0000005');
  assert.equal(formatUnitPrice(10_000, 'KWD'), '0.001');
  assert.equal(parseUnitPrice('0.00000001', 'KWD'), null);
});

test('roundHalfUp rounds halves away from zero, negatives mirrored; other fractions to the nearest', () => {
  const cases: Array<[bigint, bigint, bigint]> = [
    [5n, 2n, 3n], [-5n, 2n, -3n], // 2.5 -> 3, -2.5 -> -3
    [15n, 10n, 2n], [-15n, 10n, -2n], // 1.5 -> 2, -1.5 -> -2
    [25n, 10n, 3n], [-25n, 10n, -3n], // 2.5 -> 3
    [149n, 100n, 1n], [-149n, 100n, -1n], // 1.49 -> 1
    [151n, 100n, 2n], [-151n, 100n, -2n], // 1.51 -> 2
    [7n, 3n, 2n], [-7n, 3n, -2n], // 2.333 -> 2
    [8n, 3n, 3n], [-8n, 3n, -3n], // 2.667 -> 3
    [0n, 7n, 0n], [6n, 3n, 2n],
  ];
  for (const [num, den, want] of cases) assert.equal(roundHalfUp(num, den), want, `${num}/${den}`);
  assert.throws(() => roundHalfUp(1n, 0n), RangeError);
  assert.throws(() => roundHalfUp(1n, -2n), RangeError);
  assert.equal(roundExact({ num: 1n, den: 2n }), 1n);
  assert.equal(roundExact({ num: -1n, den: 2n }), -1n);
});

test('exact amounts: sums and products stay rationals; GiB fractions are written out exactly', () => {
  assert.deepEqual(addExact({ num: 1n, den: 3n }, { num: 1n, den: 6n }), { num: 1n, den: 2n }); // 1/3 + 1/6 = 1/2
  // 3 x USD 0.0125 = 3 x 12,500 e4 = 37,500 e4 = 3.75 cents
  assert.equal(exactToDecimal(lineAmount({ num: 3n, den: 1n }, 12_500n)), '3.75');
  // 1 byte = 1/2^30 GiB = 0.000000000931322574615478515625 (2^-30 terminates after 30 decimals)
  assert.equal(exactToDecimal({ num: 1n, den: GIB }), '0.000000000931322574615478515625');
  // 1024 bytes = 1/2^20 GiB = 0.00000095367431640625
  assert.equal(exactToDecimal({ num: 1024n, den: GIB }), '0.00000095367431640625');
  // 1,610,612,736 bytes = 1.5 GiB; 2^30 bytes = 1 GiB; 0 bytes = 0
  assert.equal(exactToDecimal({ num: 1_610_612_736n, den: GIB }), '1.5');
  assert.equal(exactToDecimal({ num: GIB, den: GIB }), '1');
  assert.equal(exactToDecimal({ num: 0n, den: GIB }), '0');
  // 1 KiB at USD 100.00 a GiB (10,000 cents = 10^8 e4): 10^8 / 2^20 / 10^4 = 10^4 / 2^20 = 0.0095367431640625 cents
  const kib = lineAmount({ num: 1024n, den: GIB }, 100_000_000n);
  assert.equal(exactToDecimal(kib), '0.0095367431640625');
  assert.equal(roundExact(kib), 0n);
  // non-terminating fractions are cut at 30 decimals (only for display; arithmetic keeps the rational)
  assert.equal(exactToDecimal({ num: 1n, den: 3n }), '0.333333333333333333333333333333');
  assert.equal(exactToDecimal({ num: -3n, den: 4n }), '-0.75');
});

test('taxOn takes the rate of the exact subtotal and rounds once; parseRate reads 0..1 with at most 6 decimals', () => {
  // 30.01 cents x 7% = 2.1007 -> 2
  assert.equal(taxOn({ num: 3001n, den: 100n }, parseRate('0.07')!), 2n);
  // 37.5 yen x 10% = 3.75 -> 4
  assert.equal(taxOn({ num: 75n, den: 2n }, parseRate('0.1')!), 4n);
  // 25 x 10% = 2.5 -> 3 (half-up)
  assert.equal(taxOn({ num: 25n, den: 1n }, parseRate('0.1')!), 3n);
  // 2500.2 fils x 5% = 125.01 -> 125
  assert.equal(taxOn({ num: 25002n, den: 10n }, parseRate('0.05')!), 125n);
  // 1000 x 8.25% = 82.5 -> 83
  assert.equal(taxOn({ num: 1000n, den: 1n }, parseRate('0.0825')!), 83n);
  assert.equal(taxOn({ num: 1000n, den: 1n }, parseRate('0')!), 0n);
  assert.equal(taxOn({ num: 1n, den: 2n }, parseRate('1')!), 1n); // 0.5 -> 1
  assert.deepEqual(parseRate('0.0825'), { num: 33n, den: 400n }); // 82,500 / 1,000,000
  assert.deepEqual(parseRate('0.123456'), { num: 1929n, den: 15625n }); // 123,456 / 1,000,000
  assert.deepEqual(parseRate('1.000000'), { num: 1n, den: 1n });
  for (const bad of ['1.000001', '0.1234567', '-0.1', '2', 'abc', '', '5%', '0,1']) assert.equal(parseRate(bad), null, bad);
});

test('formatE4Amount rounds usage costs (e4) to minor units once, half-up', () => {
  assert.equal(formatE4Amount(12_500, 'USD'), '0.01'); // 1.25 cents -> 1
  assert.equal(formatE4Amount(15_000, 'USD'), '0.02'); // 1.5 cents -> 2
  assert.equal(formatE4Amount(5_000, 'JPY'), '1'); // 0.5 yen -> 1
  assert.equal(formatE4Amount(4_999, 'JPY'), '0');
  assert.equal(formatE4Amount(104_000, 'KWD'), '0.010'); // 10.4 fils -> 10
});

test('billingPeriod in New York: months across the DST changes are half-open and one hour shorter or longer', () => {
  const ny = 'America/New_York';
  // March 2026: DST starts Sunday March 8. Mar 1 00:00 EST = 05:00Z; Apr 1 00:00 EDT = 04:00Z.
  const march = billingPeriod('monthly', ny, new Date('2026-03-15T12:00:00Z'));
  assert.equal(march.start.toISOString(), '2026-03-01T05:00:00.000Z');
  assert.equal(march.end.toISOString(), '2026-04-01T04:00:00.000Z');
  assert.equal(march.end.getTime() - march.start.getTime(), (31 * 24 - 1) * HOUR);
  // November 2026: DST ends Sunday November 1. Nov 1 00:00 EDT = 04:00Z; Dec 1 00:00 EST = 05:00Z.
  const november = billingPeriod('monthly', ny, new Date('2026-11-20T12:00:00Z'));
  assert.equal(november.start.toISOString(), '2026-11-01T04:00:00.000Z');
  assert.equal(november.end.toISOString(), '2026-12-01T05:00:00.000Z');
  assert.equal(november.end.getTime() - november.start.getTime(), (30 * 24 + 1) * HOUR);
  // half-open: the start belongs to March, the last millisecond too, the end to April
  assert.deepEqual(billingPeriod('monthly', ny, march.start), march);
  assert.deepEqual(billingPeriod('monthly', ny, new Date(march.end.getTime() - 1)), march);
  assert.equal(billingPeriod('monthly', ny, march.end).start.toISOString(), '2026-04-01T04:00:00.000Z');
  // 2026-04-01T03:30Z is still March 31, 23:30 in New York; 2026-03-01T04:30Z is still February
  assert.deepEqual(billingPeriod('monthly', ny, new Date('2026-04-01T03:30:00Z')), march);
  assert.equal(billingPeriod('monthly', ny, new Date('2026-03-01T04:30:00Z')).start.toISOString(), '2026-02-01T05:00:00.000Z');
  assert.deepEqual(monthOf(ny, new Date('2026-03-15T12:00:00Z')), march);
});

test('billingPeriod: quarters and years in the zone', () => {
  const ny = 'America/New_York';
  // Q2 2026: Apr 1 00:00 EDT = 04:00Z .. Jul 1 00:00 EDT = 04:00Z
  const q2 = billingPeriod('quarterly', ny, new Date('2026-05-15T12:00:00Z'));
  assert.deepEqual([q2.start.toISOString(), q2.end.toISOString()], ['2026-04-01T04:00:00.000Z', '2026-07-01T04:00:00.000Z']);
  // 2026-01-01T04:59Z is Dec 31, 2025, 23:59 EST: Q4 2025, Oct 1 00:00 EDT = 04:00Z .. Jan 1 00:00 EST = 05:00Z
  const q4 = billingPeriod('quarterly', ny, new Date('2026-01-01T04:59:00Z'));
  assert.deepEqual([q4.start.toISOString(), q4.end.toISOString()], ['2025-10-01T04:00:00.000Z', '2026-01-01T05:00:00.000Z']);
  // Q1 2026 starts where Q4 2025 ends
  assert.equal(billingPeriod('quarterly', ny, new Date('2026-01-01T05:00:00Z')).start.toISOString(), '2026-01-01T05:00:00.000Z');
  // the year 2026 in New York: Jan 1 00:00 EST both ends
  const y = billingPeriod('annual', ny, new Date('2026-07-04T16:00:00Z'));
  assert.deepEqual([y.start.toISOString(), y.end.toISOString()], ['2026-01-01T05:00:00.000Z', '2027-01-01T05:00:00.000Z']);
  // Tokyo (UTC+9): 2026-12-31T15:00Z is already 2027-01-01 00:00 local
  const tokyo = billingPeriod('annual', 'Asia/Tokyo', new Date('2026-12-31T15:00:00Z'));
  assert.deepEqual([tokyo.start.toISOString(), tokyo.end.toISOString()], ['2026-12-31T15:00:00.000Z', '2027-12-31T15:00:00.000Z']);
  const utc = billingPeriod('quarterly', 'UTC', new Date('2026-12-31T23:59:59.999Z'));
  assert.deepEqual([utc.start.toISOString(), utc.end.toISOString()], ['2026-10-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
});

test('America/Santiago 2026-09-06: midnight is skipped, the day starts at 01:00 (-03), and periods use that instant', () => {
  const scl = 'America/Santiago';
  // Sat Sep 5 24:00 -04 becomes Sun Sep 6 01:00 -03 = 04:00Z
  assert.equal(startOfLocalDay(2026, 9, 6, scl).toISOString(), '2026-09-06T04:00:00.000Z');
  assert.equal(localDate(new Date('2026-09-06T03:59:59Z'), scl), '2026-09-05'); // 23:59:59 -04
  assert.equal(localDate(new Date('2026-09-06T04:00:00Z'), scl), '2026-09-06'); // 01:00 -03
  // the day before and after have their midnights: Sep 5 00:00 -04 = 04:00Z, Sep 7 00:00 -03 = 03:00Z
  assert.equal(startOfLocalDay(2026, 9, 5, scl).toISOString(), '2026-09-05T04:00:00.000Z');
  assert.equal(startOfLocalDay(2026, 9, 7, scl).toISOString(), '2026-09-07T03:00:00.000Z');
  assert.equal(localDaysBefore(new Date('2026-09-07T12:00:00Z'), 1, scl).toISOString(), '2026-09-06T04:00:00.000Z');
  // September: Sep 1 00:00 -04 = 04:00Z .. Oct 1 00:00 -03 = 03:00Z
  const sep = billingPeriod('monthly', scl, new Date('2026-09-06T12:00:00Z'));
  assert.deepEqual([sep.start.toISOString(), sep.end.toISOString()], ['2026-09-01T04:00:00.000Z', '2026-10-01T03:00:00.000Z']);
});

test('localDate near midnight, and zone names', () => {
  assert.equal(localDate(new Date('2026-03-01T04:59:59.999Z'), 'America/New_York'), '2026-02-28');
  assert.equal(localDate(new Date('2026-03-01T05:00:00Z'), 'America/New_York'), '2026-03-01');
  assert.equal(localDate('2026-02-28T14:59:59.999Z', 'Asia/Tokyo'), '2026-02-28');
  assert.equal(localDate('2026-02-28T15:00:00Z', 'Asia/Tokyo'), '2026-03-01');
  assert.equal(localDate('2026-01-01T00:00:00Z', 'UTC'), '2026-01-01');
  assert.equal(localDate('2025-12-31T23:59:59.999Z', 'UTC'), '2025-12-31');
  assert.equal(startOfLocalDay(2026, 13, 1, 'UTC').toISOString(), '2027-01-01T00:00:00.000Z'); // month overflow
  assert.equal(isTimeZone('America/New_York'), true);
  assert.equal(isTimeZone('Mars/Olympus_Mons'), false);
});

test('above 2^53: Db.allBig reads integer sums as bigint (get() refuses them), and the money functions stay exact', async () => {
  const db = openDb(':memory:');
  try {
    await db.exec('CREATE TABLE u (e4 INTEGER NOT NULL, q REAL NOT NULL)');
    // Two events at 2^52 e4: their sum is 2^53 + 2, past the last integer a number holds exactly.
    for (const v of [2n ** 52n, 2n ** 52n + 2n]) await db.run('INSERT INTO u VALUES (?, 1)', v);
    await assert.rejects(async () => await db.get('SELECT sum(e4) AS e4 FROM u'), /too large/);
    const [row] = await db.allBig<{ e4: bigint; n: bigint; q: number }>('SELECT sum(e4) AS e4, count(*) AS n, total(q) AS q FROM u');
    assert.deepEqual({ ...row }, { e4: 2n ** 53n + 2n, n: 2n, q: 2 }); // REAL stays a number
    assert.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM u'))!.n, 2, 'the same SQL through get() keeps numbers (a statement of its own)');
  } finally {
    db.close();
  }
  // 9,007,199,254,740,994 e4 = 900,719,925,474.0994 cents -> 900,719,925,474 cents = USD 9,007,199,254.74
  assert.equal(formatE4Amount(2n ** 53n + 2n, 'USD'), '9007199254.74');
  // 9,100 clips x USD 1,000,000 (10^12 e4): 9.1 x 10^15 e4 = USD 9,100,000,000 exactly
  assert.equal(exactToDecimal(lineAmount({ num: 9100n, den: 1n }, 10n ** 12n)), '910000000000');
  assert.equal(roundExact(lineAmount({ num: 9100n, den: 1n }, 10n ** 12n)), 910_000_000_000n);
});
