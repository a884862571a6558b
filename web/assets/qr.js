// @ts-check
// A QR code encoder (ISO/IEC 18004) for the console's TOTP set-up: byte mode (UTF-8), versions 1..40,
// error correction L/M/Q/H, Reed-Solomon over GF(256), automatic mask choice by the penalty rules.
// Runs in the browser and in Node (no DOM); the page shows qrSvg() as a data: image.

/** @typedef {'L' | 'M' | 'Q' | 'H'} Ecl */

/** Format-information bits of each error-correction level. */
const ECL_BITS = { L: 1, M: 0, Q: 3, H: 2 };

/** Error-correction codewords per block, by level and version (index 0 unused). */
const EC_PER_BLOCK = {
  L: [0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  M: [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
  Q: [0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  H: [0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
};

/** Number of error-correction blocks, by level and version (index 0 unused). */
const EC_BLOCKS = {
  L: [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  M: [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
  Q: [0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
  H: [0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
};

// ---- GF(256) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D) and Reed-Solomon ----

const EXP = new Uint8Array(512);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = x;
  LOG[x] = i;
  x <<= 1;
  if (x & 0x100) x ^= 0x11d;
}
for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255];

/** @param {number} a @param {number} b */
function gfMul(a, b) {
  return a === 0 || b === 0 ? 0 : EXP[LOG[a] + LOG[b]];
}

/**
 * The generator polynomial of degree n (coefficients after the leading 1), roots α^0..α^(n-1).
 * @param {number} n
 */
function rsGenerator(n) {
  const g = new Uint8Array(n);
  g[n - 1] = 1;
  let root = 1;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      g[j] = gfMul(g[j], root);
      if (j + 1 < n) g[j] ^= g[j + 1];
    }
    root = gfMul(root, 2);
  }
  return g;
}

/**
 * The n error-correction codewords of `data` (the remainder of data·x^n divided by the generator).
 * @param {Uint8Array} data
 * @param {number} n
 */
function rsRemainder(data, n) {
  const g = rsGenerator(n);
  const rem = new Uint8Array(n);
  for (const byte of data) {
    const factor = byte ^ rem[0];
    rem.copyWithin(0, 1);
    rem[n - 1] = 0;
    for (let i = 0; i < n; i++) rem[i] ^= gfMul(g[i], factor);
  }
  return rem;
}

// ---- sizes and capacities ----

/** @param {number} version */
const sizeOf = (version) => version * 4 + 17;

/**
 * The centres of the alignment patterns along one axis.
 * @param {number} version
 */
function alignmentPositions(version) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = version === 32 ? 26 : Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const result = [6];
  for (let pos = sizeOf(version) - 7; result.length < count; pos -= step) result.splice(1, 0, pos);
  return result;
}

/**
 * Modules left for data and error correction (everything but function patterns), in bits.
 * @param {number} version
 */
function rawDataModules(version) {
  let result = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    result -= (25 * align - 10) * align - 55;
    if (version >= 7) result -= 36;
  }
  return result;
}

/** @param {number} version @param {Ecl} ecl */
function dataCodewords(version, ecl) {
  return Math.floor(rawDataModules(version) / 8) - EC_PER_BLOCK[ecl][version] * EC_BLOCKS[ecl][version];
}

/** Bits of the byte-mode character count. @param {number} version */
const countBits = (version) => (version <= 9 ? 8 : 16);

/**
 * The most bytes (UTF-8) a version and level hold in byte mode.
 * @param {number} version 1..40
 * @param {Ecl} ecl
 */
export function qrCapacity(version, ecl) {
  return Math.floor((dataCodewords(version, ecl) * 8 - 4 - countBits(version)) / 8);
}

// ---- data codewords ----

/**
 * Mode, count, bytes, terminator and padding, split into blocks with their EC, interleaved.
 * @param {Uint8Array} bytes
 * @param {number} version
 * @param {Ecl} ecl
 * @returns {number[]}
 */
function codewords(bytes, version, ecl) {
  const capacity = dataCodewords(version, ecl);
  /** @type {number[]} */
  const bits = [];
  /** @param {number} value @param {number} length */
  const put = (value, length) => { for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1); };
  put(0b0100, 4);
  put(bytes.length, countBits(version));
  for (const b of bytes) put(b, 8);
  put(0, Math.min(4, capacity * 8 - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity * 8; pad ^= 0xec ^ 0x11) put(pad, 8);
  const data = new Uint8Array(capacity);
  for (let i = 0; i < bits.length; i++) data[i >>> 3] |= bits[i] << (7 - (i & 7));

  const blocks = EC_BLOCKS[ecl][version];
  const ecLen = EC_PER_BLOCK[ecl][version];
  const total = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blocks - (total % blocks);
  const shortLen = Math.floor(total / blocks) - ecLen;
  /** @type {Uint8Array[]} */
  const dataBlocks = [];
  /** @type {Uint8Array[]} */
  const ecBlocks = [];
  for (let i = 0, k = 0; i < blocks; i++) {
    const len = shortLen + (i < shortBlocks ? 0 : 1);
    const block = data.subarray(k, k + len);
    k += len;
    dataBlocks.push(block);
    ecBlocks.push(rsRemainder(block, ecLen));
  }
  /** @type {number[]} */
  const out = [];
  for (let i = 0; i <= shortLen; i++) for (const b of dataBlocks) if (i < b.length) out.push(b[i]);
  for (let i = 0; i < ecLen; i++) for (const b of ecBlocks) out.push(b[i]);
  return out;
}

// ---- the matrix ----

class Grid {
  /** @param {number} size */
  constructor(size) {
    this.size = size;
    this.dark = new Uint8Array(size * size);
    this.fixed = new Uint8Array(size * size);
  }
  /**
   * A function module (finder, timing, alignment, format, version, dark module).
   * @param {number} row @param {number} col @param {boolean | number} dark
   */
  set(row, col, dark) {
    this.dark[row * this.size + col] = dark ? 1 : 0;
    this.fixed[row * this.size + col] = 1;
  }
  /** @param {number} row @param {number} col */
  get(row, col) {
    return this.dark[row * this.size + col];
  }
}

/**
 * Finders with separators, timing, alignment patterns, the reserved format areas and the version blocks.
 * @param {Grid} grid
 * @param {number} version
 */
function drawFunctionPatterns(grid, version) {
  const size = grid.size;
  for (const [r0, c0] of [[0, 0], [0, size - 7], [size - 7, 0]]) {
    for (let r = -1; r <= 7; r++) {
      for (let c = -1; c <= 7; c++) {
        const row = r0 + r;
        const col = c0 + c;
        if (row < 0 || row >= size || col < 0 || col >= size) continue;
        const ring = Math.max(Math.abs(r - 3), Math.abs(c - 3));
        grid.set(row, col, ring !== 2 && ring !== 4);
      }
    }
  }
  for (let i = 8; i < size - 8; i++) {
    grid.set(6, i, i % 2 === 0);
    grid.set(i, 6, i % 2 === 0);
  }
  const centres = alignmentPositions(version);
  const last = centres.length - 1;
  for (let a = 0; a <= last; a++) {
    for (let b = 0; b <= last; b++) {
      if ((a === 0 && b === 0) || (a === 0 && b === last) || (a === last && b === 0)) continue;
      for (let r = -2; r <= 2; r++) {
        for (let c = -2; c <= 2; c++) grid.set(centres[a] + r, centres[b] + c, Math.max(Math.abs(r), Math.abs(c)) !== 1);
      }
    }
  }
  drawFormat(grid, 0); // reserves the format areas and the dark module
  if (version >= 7) {
    let rem = version;
    for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
    const bits = (version << 12) | rem;
    for (let i = 0; i < 18; i++) {
      const bit = (bits >>> i) & 1;
      const a = size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      grid.set(b, a, bit);
      grid.set(a, b, bit);
    }
  }
}

/**
 * The 15 format bits (level and mask with their BCH code, XOR 0x5412), both copies, and the dark module.
 * @param {Grid} grid
 * @param {number} formatData level bits << 3 | mask
 */
function drawFormat(grid, formatData) {
  let rem = formatData;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  const bits = ((formatData << 10) | rem) ^ 0x5412;
  const size = grid.size;
  for (let i = 0; i < 15; i++) {
    const bit = (bits >>> i) & 1;
    grid.set(i < 6 ? i : i < 8 ? i + 1 : size - 15 + i, 8, bit);
    grid.set(8, i < 8 ? size - 1 - i : i === 8 ? 7 : 14 - i, bit);
  }
  grid.set(size - 8, 8, 1);
}

/**
 * The codewords along the two-column zigzag from the bottom right, skipping function modules.
 * @param {Grid} grid
 * @param {number[]} data
 */
function drawCodewords(grid, data) {
  const size = grid.size;
  let i = 0;
  let upward = true;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    for (let v = 0; v < size; v++) {
      const row = upward ? size - 1 - v : v;
      for (let j = 0; j < 2; j++) {
        const col = right - j;
        const at = row * size + col;
        if (grid.fixed[at]) continue;
        grid.dark[at] = i < data.length * 8 ? (data[i >>> 3] >>> (7 - (i & 7))) & 1 : 0;
        i++;
      }
    }
    upward = !upward;
  }
}

/**
 * The eight mask conditions (row, column): true = flip the module.
 * @type {Array<(r: number, c: number) => boolean>}
 */
const MASKS = [
  (r, c) => (r + c) % 2 === 0,
  (r, _c) => r % 2 === 0,
  (_r, c) => c % 3 === 0,
  (r, c) => (r + c) % 3 === 0,
  (r, c) => (Math.floor(r / 2) + Math.floor(c / 3)) % 2 === 0,
  (r, c) => ((r * c) % 2) + ((r * c) % 3) === 0,
  (r, c) => (((r * c) % 2) + ((r * c) % 3)) % 2 === 0,
  (r, c) => (((r + c) % 2) + ((r * c) % 3)) % 2 === 0,
];

/**
 * XORs the mask over the data modules (applying it twice undoes it).
 * @param {Grid} grid
 * @param {number} mask
 */
function applyMask(grid, mask) {
  const size = grid.size;
  const fn = MASKS[mask];
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) if (!grid.fixed[r * size + c] && fn(r, c)) grid.dark[r * size + c] ^= 1;
  }
}

/**
 * The penalty score (N1 = 3, N2 = 3, N3 = 40, N4 = 10), scored exactly as the npm `qrcode` package scores
 * it so that both choose the same mask: N1 runs of 5+ same-colour modules in a row or column (3 + run - 5);
 * N2 each 2x2 same-colour square; N3 each 1011101 with 0000 before or after it, within the symbol;
 * N4 10 per 5 % step of the dark share, k = |ceil(dark% / 5) - 10|.
 * @param {Grid} grid
 * @returns {number}
 */
function penalty(grid) {
  const size = grid.size;
  const d = grid.dark;
  let n1 = 0;
  let n2 = 0;
  let n3 = 0;
  let dark = 0;
  for (let a = 0; a < size; a++) {
    let runRow = 0;
    let runCol = 0;
    let lastRow = -1;
    let lastCol = -1;
    let bitsRow = 0;
    let bitsCol = 0;
    for (let b = 0; b < size; b++) {
      const inRow = d[a * size + b];
      const inCol = d[b * size + a];
      dark += inRow;
      if (inRow === lastRow) runRow++;
      else { if (runRow >= 5) n1 += 3 + runRow - 5; lastRow = inRow; runRow = 1; }
      if (inCol === lastCol) runCol++;
      else { if (runCol >= 5) n1 += 3 + runCol - 5; lastCol = inCol; runCol = 1; }
      bitsRow = ((bitsRow << 1) & 0x7ff) | inRow;
      bitsCol = ((bitsCol << 1) & 0x7ff) | inCol;
      if (b >= 10 && (bitsRow === 0x5d0 || bitsRow === 0x05d)) n3++;
      if (b >= 10 && (bitsCol === 0x5d0 || bitsCol === 0x05d)) n3++;
      if (a < size - 1 && b < size - 1) {
        const sum = inRow + d[a * size + b + 1] + d[(a + 1) * size + b] + d[(a + 1) * size + b + 1];
        if (sum === 0 || sum === 4) n2++;
      }
    }
    if (runRow >= 5) n1 += 3 + runRow - 5;
    if (runCol >= 5) n1 += 3 + runCol - 5;
  }
  const k = Math.abs(Math.ceil((dark * 100) / (size * size) / 5) - 10);
  return n1 + n2 * 3 + n3 * 40 + k * 10;
}

/**
 * Encodes `text` (UTF-8, byte mode) as a QR code.
 * @param {string} text
 * @param {Ecl} [ecl] error correction level (default M)
 * @param {{ version?: number, mask?: number }} [opts] a fixed version (1..40) or mask (0..7); default: the
 *   smallest version that holds the text and the mask with the lowest penalty
 * @returns {{ version: number, mask: number, ecl: Ecl, modules: boolean[][] }}
 */
export function qrEncode(text, ecl = 'M', opts = {}) {
  if (!(ecl in ECL_BITS)) throw new RangeError(`unknown error correction level ${ecl}`);
  const bytes = new TextEncoder().encode(text);
  /** @param {number} v */
  const fits = (v) => 4 + countBits(v) + bytes.length * 8 <= dataCodewords(v, ecl) * 8;
  let version = opts.version;
  if (version === undefined) {
    for (let v = 1; v <= 40 && version === undefined; v++) if (fits(v)) version = v;
    if (version === undefined) throw new RangeError('text too long for a QR code');
  } else if (!Number.isInteger(version) || version < 1 || version > 40) {
    throw new RangeError(`version must be 1..40, got ${version}`);
  } else if (!fits(version)) {
    throw new RangeError(`text too long for version ${version}-${ecl}`);
  }
  if (opts.mask !== undefined && !(Number.isInteger(opts.mask) && opts.mask >= 0 && opts.mask <= 7)) {
    throw new RangeError(`mask must be 0..7, got ${opts.mask}`);
  }

  const grid = new Grid(sizeOf(version));
  drawFunctionPatterns(grid, version);
  drawCodewords(grid, codewords(bytes, version, ecl));

  let mask = opts.mask;
  if (mask === undefined) {
    let best = Infinity;
    for (let m = 0; m < 8; m++) {
      drawFormat(grid, (ECL_BITS[ecl] << 3) | m);
      applyMask(grid, m);
      const score = penalty(grid);
      applyMask(grid, m);
      if (score < best) { best = score; mask = m; }
    }
  }
  const chosen = /** @type {number} */ (mask);
  applyMask(grid, chosen);
  drawFormat(grid, (ECL_BITS[ecl] << 3) | chosen);

  /** @type {boolean[][]} */
  const modules = [];
  for (let r = 0; r < grid.size; r++) modules.push(Array.from(grid.dark.subarray(r * grid.size, (r + 1) * grid.size), (x) => x === 1));
  return { version, mask: chosen, ecl, modules };
}

/**
 * The modules of the QR code of `text`: rows of booleans, true = dark.
 * @param {string} text
 * @param {Ecl} [ecl]
 * @param {{ version?: number, mask?: number }} [opts]
 * @returns {boolean[][]}
 */
export function qrMatrix(text, ecl = 'M', opts = {}) {
  return qrEncode(text, ecl, opts).modules;
}

/**
 * An SVG image of the matrix with a 4-module light quiet zone, `scale` pixels a module.
 * @param {boolean[][]} matrix
 * @param {number} [scale]
 * @returns {string}
 */
export function qrSvg(matrix, scale = 4) {
  const n = matrix.length;
  const full = n + 8;
  const px = full * scale;
  let path = '';
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) if (matrix[r][c]) path += `M${c + 4} ${r + 4}h1v1h-1z`;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${px}" height="${px}" viewBox="0 0 ${full} ${full}" shape-rendering="crispEdges">`
    + `<rect width="${full}" height="${full}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}
