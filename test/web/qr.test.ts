// The console's QR encoder (web/assets/qr.js) against the npm `qrcode` package: the same modules at
// every version 1..40, level L/M/Q/H and mask 0..7; the same automatic version and mask choice for
// many texts (real otpauth:// URIs of the service among them); the SVG's quiet zone and modules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { newTotpSecret, otpauthUri } from '../../src/identity/mfa/totp.ts';

type Ecl = 'L' | 'M' | 'Q' | 'H';
interface Encoded { version: number; mask: number; ecl: Ecl; modules: boolean[][] }
interface QrModule {
  qrEncode(text: string, ecl?: Ecl, opts?: { version?: number; mask?: number }): Encoded;
  qrMatrix(text: string, ecl?: Ecl, opts?: { version?: number; mask?: number }): boolean[][];
  qrSvg(matrix: boolean[][], scale?: number): string;
  qrCapacity(version: number, ecl: Ecl): number;
}
interface QrCodeLib {
  create(data: Array<{ data: string; mode: 'byte' }>, opts: { errorCorrectionLevel: Ecl; version?: number; maskPattern?: number }): {
    version: number; maskPattern: number; modules: { size: number; data: Uint8Array };
  };
}

// The browser module is plain JavaScript (no declaration file): imported by a computed specifier.
const qr = (await import(new URL('../../web/assets/qr.js', import.meta.url).href)) as QrModule;
const QRCode = createRequire(import.meta.url)('qrcode') as QrCodeLib;
const LEVELS: Ecl[] = ['L', 'M', 'Q', 'H'];
const capacity = (version: number, ecl: Ecl): number => qr.qrCapacity(version, ecl);

/** The reference: `qrcode` with one byte-mode segment (the encoder's only mode), as rows of booleans. */
function reference(text: string, ecl: Ecl, version?: number, maskPattern?: number) {
  const sym = QRCode.create([{ data: text, mode: 'byte' }], { errorCorrectionLevel: ecl, version, maskPattern });
  const n = sym.modules.size;
  const rows: boolean[][] = [];
  for (let r = 0; r < n; r++) rows.push(Array.from(sym.modules.data.subarray(r * n, (r + 1) * n), (x) => x === 1));
  return { version: sym.version, mask: sym.maskPattern, modules: rows };
}

/** Deterministic pseudo-random text (xorshift), from an alphabet with ASCII, Latin-1 and astral characters. */
function randomTexts(count: number, seed: number, maxLen: number): string[] {
  const alphabet = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :/?&=%.-_@+', 'é', 'ß', '€', '日', '😀'];
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const len = 1 + (next() % maxLen);
    let t = '';
    for (let j = 0; j < len; j++) t += alphabet[next() % alphabet.length];
    out.push(t);
  }
  return out;
}

const diff = (a: boolean[][], b: boolean[][]): string => {
  if (a.length !== b.length) return `size ${a.length} vs ${b.length}`;
  for (let r = 0; r < a.length; r++) for (let c = 0; c < a.length; c++) if (a[r][c] !== b[r][c]) return `first difference at row ${r}, column ${c}`;
  return 'equal';
};

test('every version 1..40 and level, with every mask: the same modules as qrcode', () => {
  for (let version = 1; version <= 40; version++) {
    for (const ecl of LEVELS) {
      // A text that needs exactly this version: one byte more than the previous version holds.
      const prev = version === 1 ? 0 : capacity(version - 1, ecl);
      const text = 'v' + String(version).padStart(2, '0') + ecl + 'x'.repeat(Math.max(0, prev + 1 - 4));
      // Every mask up to version 10 and at 40, two masks per level in between (each mask still at many versions).
      const masks = version <= 10 || version === 40 ? [0, 1, 2, 3, 4, 5, 6, 7] : [version % 8, (version + 4) % 8];
      for (const mask of masks) {
        const mine = qr.qrEncode(text, ecl, { version, mask });
        const ref = reference(text, ecl, version, mask);
        assert.equal(mine.modules.length, version * 4 + 17);
        assert.equal(diff(mine.modules, ref.modules), 'equal', `version ${version}-${ecl} mask ${mask}`);
      }
      assert.equal(qr.qrEncode(text, ecl).version, version, `"${text.slice(0, 10)}…" needs version ${version}-${ecl}`);
    }
  }
});

test('byte capacity of every version and level equals qrcode\'s (the largest text fits, one more byte does not), the smallest version is chosen', () => {
  for (let version = 1; version <= 40; version++) {
    for (const ecl of LEVELS) {
      const cap = capacity(version, ecl);
      assert.doesNotThrow(() => reference('a'.repeat(cap), ecl, version, 0), `qrcode: ${version}-${ecl} holds ${cap}`);
      assert.throws(() => reference('a'.repeat(cap + 1), ecl, version, 0), `qrcode: ${version}-${ecl} holds no more than ${cap}`);
      assert.equal(qr.qrEncode('a'.repeat(cap), ecl).version, version, `${cap} bytes need ${version}-${ecl}`);
      assert.throws(() => qr.qrEncode('a'.repeat(cap + 1), ecl, { version }), /too long/);
    }
  }
  // The tabled figures of the standard for byte mode, a few spot checks.
  assert.equal(capacity(1, 'L'), 17);
  assert.equal(capacity(1, 'H'), 7);
  assert.equal(capacity(10, 'M'), 213);
  assert.equal(capacity(40, 'L'), 2953);
});

test('automatic version and mask equal qrcode\'s for real otpauth URIs and many other texts', () => {
  const uris = Array.from({ length: 12 }, (_, i) => otpauthUri(newTotpSecret(), `person.${i}+tag@example-${i}.com`));
  assert.match(uris[0], /^otpauth:\/\/totp\/svc:person\.0%2Btag%40example-0\.com\?.*secret=[A-Z2-7]{32}/);
  const texts = [
    ...uris,
    'a', '0', 'HELLO WORLD', 'https://example.com/', 'Grüße, 世界 😀', ' ', '\u0000\u0001',
    'otpauth://totp/svc:alice%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=svc&algorithm=SHA1&digits=6&period=30',
    ...randomTexts(150, 0x5eed, 120),
    ...randomTexts(25, 0xbeef, 600),
  ];
  const masks = new Set<number>();
  for (const text of texts) {
    for (const ecl of LEVELS) {
      const ref = reference(text, ecl);
      const mine = qr.qrEncode(text, ecl);
      assert.equal(mine.version, ref.version, `version of ${JSON.stringify(text.slice(0, 40))} at ${ecl}`);
      assert.equal(mine.mask, ref.mask, `mask of ${JSON.stringify(text.slice(0, 40))} at ${ecl}`);
      assert.equal(diff(mine.modules, ref.modules), 'equal');
      assert.deepEqual(qr.qrMatrix(text, ecl), mine.modules);
      masks.add(mine.mask);
    }
  }
  assert.equal(masks.size, 8, 'the texts exercise every mask choice');
  // The default level is M.
  assert.deepEqual(qr.qrMatrix(uris[0]), reference(uris[0], 'M').modules);
});

test('qrSvg: a 4-module light quiet zone around exactly the dark modules, scale pixels a module', () => {
  const matrix = qr.qrMatrix('otpauth://totp/svc:a%40b.c?secret=ABC', 'M');
  const n = matrix.length;
  for (const scale of [4, 1, 7]) {
    const svg = qr.qrSvg(matrix, scale);
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok(svg.includes(`width="${(n + 8) * scale}" height="${(n + 8) * scale}" viewBox="0 0 ${n + 8} ${n + 8}"`));
    assert.ok(svg.includes(`<rect width="${n + 8}" height="${n + 8}" fill="#fff"/>`), 'a light background under the quiet zone');
    assert.doesNotMatch(svg, /<script|on\w+=/i);
  }
  assert.equal(qr.qrSvg(matrix), qr.qrSvg(matrix, 4), 'scale 4 by default');
  // Redraw the matrix from the path: every dark module and nothing else, none in the quiet zone.
  const d = /<path fill="#000" d="([^"]*)"/.exec(qr.qrSvg(matrix))![1];
  const drawn = Array.from({ length: n + 8 }, () => new Array<boolean>(n + 8).fill(false));
  for (const m of d.matchAll(/M(\d+) (\d+)h1v1h-1z/g)) drawn[Number(m[2])][Number(m[1])] = true;
  assert.equal(d.replace(/M\d+ \d+h1v1h-1z/g, ''), '', 'the path is only unit squares');
  for (let r = 0; r < n + 8; r++) {
    for (let c = 0; c < n + 8; c++) {
      const inside = r >= 4 && c >= 4 && r < n + 4 && c < n + 4;
      assert.equal(drawn[r][c], inside ? matrix[r - 4][c - 4] : false, `module ${r},${c}`);
    }
  }
});

test('refusals: unknown level, bad version or mask, text too long for the version or for any version', () => {
  assert.throws(() => qr.qrEncode('x', 'X' as Ecl), RangeError);
  assert.throws(() => qr.qrEncode('x', 'M', { version: 0 }), RangeError);
  assert.throws(() => qr.qrEncode('x', 'M', { version: 41 }), RangeError);
  assert.throws(() => qr.qrEncode('x', 'M', { mask: 8 }), RangeError);
  assert.throws(() => qr.qrEncode('x'.repeat(15), 'H', { version: 1 }), /too long for version 1-H/);
  assert.throws(() => qr.qrEncode('x'.repeat(2954), 'L'), /too long/);
  assert.equal(qr.qrEncode('x'.repeat(2953), 'L').version, 40);
});
