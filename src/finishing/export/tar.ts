// A POSIX ustar archive writer (no dependency): for each entry a 512-byte header (name, or a prefix
// and name for paths over 100 bytes; mode; size and mtime in octal; checksum; type '0' file or '5'
// folder; magic "ustar\0" version "00"), then the file's bytes padded to 512; two zero blocks end
// the archive. tarBlocks() yields the bytes (from local files or from the store), so the archive can
// be streamed into a file (writeTar, hashing as it goes) or into the store's write(), which hashes too.
import crypto from 'node:crypto';
import fs from 'node:fs';

export interface TarEntry {
  /** The path inside the archive ("a/b.txt"; folders end without "/"). */
  name: string;
  /** The file to store (an absolute path, or a stored key when archiving from the store); absent for a folder. */
  file?: string;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  const s = value.toString(8);
  if (s.length > width - 1) throw new Error(`tar: ${value} does not fit in ${width - 1} octal digits`);
  return s.padStart(width - 1, '0');
}

/** Splits a path over 100 bytes into a prefix (up to 155) and a name (up to 100) at a "/". */
function splitName(p: string): { name: string; prefix: string } {
  if (Buffer.byteLength(p) <= 100) return { name: p, prefix: '' };
  for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) {
    const prefix = p.slice(0, i);
    const name = p.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name) return { name, prefix };
  }
  throw new Error(`tar: the path is too long for ustar: ${p}`);
}

export function tarHeader(path: string, size: number, mtimeSeconds: number, folder: boolean): Buffer {
  const h = Buffer.alloc(BLOCK);
  const { name, prefix } = splitName(folder ? `${path}/` : path);
  h.write(name, 0, 100, 'utf8');
  h.write(`${octal(folder ? 0o755 : 0o644, 8)}\0`, 100, 'ascii');
  h.write(`${octal(0, 8)}\0`, 108, 'ascii');
  h.write(`${octal(0, 8)}\0`, 116, 'ascii');
  h.write(`${octal(folder ? 0 : size, 12)}\0`, 124, 'ascii');
  h.write(`${octal(mtimeSeconds, 12)}\0`, 136, 'ascii');
  h.write(' '.repeat(8), 148, 'ascii');
  h.write(folder ? '5' : '0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${octal(sum, 7)}\0 `, 148, 'ascii');
  return h;
}

/** What an entry's `file` names, opened for the archive: its size and its bytes. */
export type TarSource = (file: string) => Promise<{ size: number; bytes: AsyncIterable<Buffer> }>;

const localSource: TarSource = async (file) => ({
  size: (await fs.promises.stat(file)).size,
  bytes: fs.createReadStream(file, { highWaterMark: 1 << 20 }),
});

/**
 * The archive's bytes, block by block: each entry's header, then its bytes (opened through `open`,
 * a local file by default, a stored object for a package in the store) padded to 512, then the two
 * zero blocks. Throws when a file's size changed while it was read.
 */
export async function* tarBlocks(entries: TarEntry[], mtimeSeconds: number, open: TarSource = localSource): AsyncGenerator<Buffer> {
  for (const e of entries) {
    if (!e.file) {
      yield tarHeader(e.name, 0, mtimeSeconds, true);
      continue;
    }
    const { size: length, bytes } = await open(e.file);
    yield tarHeader(e.name, length, mtimeSeconds, false);
    let copied = 0;
    for await (const chunk of bytes) {
      copied += chunk.length;
      if (copied > length) break;
      yield chunk;
    }
    if (copied !== length) throw new Error(`tar: ${e.name} changed while it was archived`);
    if (length % BLOCK) yield Buffer.alloc(BLOCK - (length % BLOCK));
  }
  yield Buffer.alloc(BLOCK * 2);
}

/** Writes the archive of local files to `out` (created, must not exist); answers its size and SHA-256. */
export async function writeTar(out: string, entries: TarEntry[], mtimeSeconds: number): Promise<{ size: number; sha256: string }> {
  const hash = crypto.createHash('sha256');
  let size = 0;
  const fh = await fs.promises.open(out, 'wx');
  try {
    for await (const b of tarBlocks(entries, mtimeSeconds)) {
      hash.update(b);
      size += b.length;
      await fh.write(b);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return { size, sha256: hash.digest('hex') };
}
