// Money without floats. Amounts are integers in the currency's minor unit (ISO 4217 exponent: JPY 0,
// USD 2, KWD 3); unit prices and usage costs are integers in 1/10,000 of a minor unit (`e4`), so that
// prices such as USD 0.0125 a clip are exact. Products of quantities and prices stay exact rationals
// (`Exact`, minor units) until they are rounded, once, half away from zero (half-up for the
// non-negative amounts of invoices). The API writes amounts as decimal strings in the major unit
// with exactly the currency's decimals ("12.50", "1500", "1.250") and unit prices with up to four
// more decimals ("0.0125"), trailing zeros beyond the currency's decimals dropped.

/** ISO 4217 minor-unit exponents of the currencies an account may use. */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = Object.freeze({
  AED: 2, AUD: 2, BHD: 3, BRL: 2, CAD: 2, CHF: 2, CLP: 0, CNY: 2, CZK: 2, DKK: 2, EUR: 2, GBP: 2, HKD: 2, HUF: 2, IDR: 2, ILS: 2,
  INR: 2, IQD: 3, ISK: 0, JOD: 3, JPY: 0, KRW: 0, KWD: 3, LYD: 3, MXN: 2, MYR: 2, NOK: 2, NZD: 2, OMR: 3, PHP: 2, PLN: 2, SAR: 2,
  SEK: 2, SGD: 2, THB: 2, TND: 3, TRY: 2, TWD: 2, UGX: 0, USD: 2, VND: 0, XAF: 0, XOF: 0, ZAR: 2,
});

/** Decimals a unit price carries beyond the currency's minor unit. */
export const PRICE_EXTRA_DIGITS = 4;
const PRICE_SCALE = 10n ** BigInt(PRICE_EXTRA_DIGITS);

export const isCurrency = (code: string): boolean => Object.hasOwn(CURRENCY_EXPONENTS, code);

export function exponentOf(currency: string): number {
  const e = CURRENCY_EXPONENTS[currency];
  if (e === undefined) throw new RangeError(`unknown currency ${currency}`);
  return e;
}

const DECIMAL = /^(-)?(\d{1,30})(?:\.(\d{1,30}))?$/;

/** A plain decimal string ("12.5", "-3", "0.0125") as an integer with `scale` decimals; null when it is not one or has more decimals. */
export function parseDecimal(text: string, scale: number): bigint | null {
  const m = DECIMAL.exec(text.trim());
  if (!m) return null;
  const frac = m[3] ?? '';
  if (frac.length > scale) {
    if (/[^0]/.test(frac.slice(scale))) return null;
  }
  const digits = BigInt(m[2] + frac.slice(0, scale).padEnd(scale, '0'));
  return m[1] ? -digits : digits;
}

/** An integer with `scale` decimals as a decimal string with exactly `scale` decimals. */
export function formatDecimal(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${whole}` : whole;
}

/** num/den rounded to an integer, halves away from zero (den > 0). */
export function roundHalfUp(num: bigint, den: bigint): bigint {
  if (den <= 0n) throw new RangeError('the denominator must be positive');
  const negative = num < 0n;
  const n = negative ? -num : num;
  const q = (2n * n + den) / (2n * den);
  return negative ? -q : q;
}

/** An exact amount in minor units: num/den, den > 0. */
export interface Exact { num: bigint; den: bigint }

const gcd = (a: bigint, b: bigint): bigint => {
  let x = a < 0n ? -a : a;
  let y = b;
  while (y) [x, y] = [y, x % y];
  return x || 1n;
};
const reduce = (e: Exact): Exact => {
  const g = gcd(e.num, e.den);
  return { num: e.num / g, den: e.den / g };
};

export const ZERO: Exact = Object.freeze({ num: 0n, den: 1n });
export const exactOfMinor = (minor: bigint): Exact => ({ num: minor, den: 1n });
export const addExact = (a: Exact, b: Exact): Exact => reduce({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
export const roundExact = (e: Exact): bigint => roundHalfUp(e.num, e.den);

/** quantity (num/den of the price's unit) x a unit price in e4: the exact amount in minor units. */
export function lineAmount(quantity: Exact, unitPriceE4: bigint): Exact {
  return reduce({ num: quantity.num * unitPriceE4, den: quantity.den * PRICE_SCALE });
}

/** The exact amount as a decimal string (minor units); denominators of 2^a 5^b terminate, others are cut at 30 decimals. */
export function exactToDecimal(e: Exact): string {
  const r = reduce(e);
  let den = r.den;
  let twos = 0;
  let fives = 0;
  while (den % 2n === 0n) { den /= 2n; twos++; }
  while (den % 5n === 0n) { den /= 5n; fives++; }
  const scale = den === 1n ? Math.max(twos, fives) : 30;
  const scaled = (r.num * 10n ** BigInt(scale)) / r.den;
  const text = formatDecimal(scaled, scale);
  return scale === 0 ? text : text.replace(/\.?0+$/, '');
}

/** Tax on the exact (unrounded) subtotal at a rate given as a decimal fraction ("0.0825"), rounded once. */
export function taxOn(subtotal: Exact, rate: Exact): bigint {
  return roundHalfUp(subtotal.num * rate.num, subtotal.den * rate.den);
}

/** A tax rate: a decimal fraction 0..1 with at most 6 decimals ("0.19", "0.0825"); null otherwise. */
export function parseRate(text: string): Exact | null {
  const v = parseDecimal(text, 6);
  if (v === null || v < 0n || v > 1_000_000n) return null;
  return reduce({ num: v, den: 1_000_000n });
}

/** Minor units as the API's decimal string ("12.50" USD, "1500" JPY, "1.250" KWD). */
export const formatAmount = (minor: bigint | number, currency: string): string => formatDecimal(BigInt(minor), exponentOf(currency));
/** A decimal string in the major unit as minor units; null when it has more decimals than the currency. */
export const parseAmount = (text: string, currency: string): bigint | null => parseDecimal(text, exponentOf(currency));

/** A unit price in e4 as a decimal string: the currency's decimals, plus the extra ones that are not zero ("0.0125", "2.50"). */
export function formatUnitPrice(e4: bigint | number, currency: string): string {
  const exp = exponentOf(currency);
  const full = formatDecimal(BigInt(e4), exp + PRICE_EXTRA_DIGITS);
  const keep = exp === 0 ? full.replace(/\.?0+$/, '') : full.replace(new RegExp(`(\\.\\d{${exp}}\\d*?)0+$`), '$1');
  return keep;
}
/** A unit price decimal string as e4 units; null when it has more than the currency's decimals + 4. */
export const parseUnitPrice = (text: string, currency: string): bigint | null => parseDecimal(text, exponentOf(currency) + PRICE_EXTRA_DIGITS);

/** Usage costs (e4) as an amount string, rounded half-up once. */
export const formatE4Amount = (e4: bigint | number, currency: string): string =>
  formatAmount(roundHalfUp(BigInt(e4), PRICE_SCALE), currency);
