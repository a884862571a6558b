// A POSIX ustar archive writer (no dependency): for each entry a 512-byte header (name, or a prefix
// and name for paths over 100 bytes; mode; size and mtime in octal; checksum; type '0' file or '5'
// folder; magic "ustar\0" version "00"), then the file's bytes padded to 512; two zero blocks end
// the archive. Written through one file handle while hashing, so the archive's SHA-256 comes free.
import crypto from 'node:crypto';
import fs from 'node:fs';

export interface TarEntry {
  /** The path inside the archive ("a/b.txt"; folders end without "/"). */
  name: string;
  /** Absolute path of the file to store; absent for a folder. */
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

/** Writes the archive to `out` (created, must not exist); answers its size and SHA-256. */
export async function writeTar(out: string, entries: TarEntry[], mtimeSeconds: number): Promise<{ size: number; sha256: string }> {
  const hash = crypto.createHash('sha256');
  let size = 0;
  const fh = await fs.promises.open(out, 'wx');
  const put = async (b: Buffer) => {
    hash.update(b);
    size += b.length;
    await fh.write(b);
  };
  try {
    for (const e of entries) {
      if (!e.file) {
        await put(tarHeader(e.name, 0, mtimeSeconds, true));
        continue;
      }
      const length = (await fs.promises.stat(e.file)).size;
      await put(tarHeader(e.name, length, mtimeSeconds, false));
      let copied = 0;
      for await (const chunk of fs.createReadStream(e.file, { highWaterMark: 1 << 20 })) {
        copied += (chunk as Buffer).length;
        await put(chunk as Buffer);
      }
      if (copied !== length) throw new Error(`tar: ${e.name} changed while it was archived`);
      if (length % BLOCK) await put(Buffer.alloc(BLOCK - (length % BLOCK)));
    }
    await put(Buffer.alloc(BLOCK * 2));
    await fh.sync();
  } finally {
    await fh.close();
  }
  return { size, sha256: hash.digest('hex') };
}
