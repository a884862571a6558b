// The pixel size a PNG or JPEG declares in its header, read without decoding: a video's reference
// picture is refused by its declared size before ffmpeg scales it (a few bytes can claim 16000x16000
// pixels, gigabytes once decoded).
import type { Size } from './scenes.ts';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not. */
const isFrameHeader = (marker: number) => (marker & 0xf0) === 0xc0 && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
/** Markers that stand alone, without a length: SOI, RST0..RST7, TEM. */
const isStandalone = (marker: number) => marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01;

/**
 * Width and height as the PNG's IHDR chunk or the JPEG's first frame header (SOFn) declares them;
 * null when the bytes are neither or the header is cut short or malformed. JPEG segments are walked
 * by their lengths up to the frame header; reaching a scan (SOS) or the end (EOI) first is malformed.
 */
export function pictureSize(b: Buffer): Size | null {
  if (b.subarray(0, 8).equals(PNG_SIGNATURE)) {
    // The first chunk: length 13, type IHDR, width, height.
    if (b.length < 24 || b.readUInt32BE(8) !== 13 || b.toString('latin1', 12, 16) !== 'IHDR') return null;
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  }
  if (b[0] !== 0xff || b[1] !== 0xd8) return null;
  let at = 2;
  while (at < b.length) {
    if (b[at] !== 0xff) return null;
    while (b[at] === 0xff) at++; // fill bytes before a marker
    if (at >= b.length) return null;
    const marker = b[at++];
    if (isStandalone(marker)) continue;
    if (marker === 0xda || marker === 0xd9 || at + 2 > b.length) return null;
    const length = b.readUInt16BE(at); // counts itself, not the marker
    if (length < 2) return null;
    if (isFrameHeader(marker)) {
      // length, precision (1 byte), height, width
      return length >= 8 && at + 7 <= b.length ? { width: b.readUInt16BE(at + 5), height: b.readUInt16BE(at + 3) } : null;
    }
    at += length;
  }
  return null;
}
