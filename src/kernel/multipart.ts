// A streaming reader of multipart/form-data (RFC 7578) that yields the bytes of the first part
// carrying a file name, without holding the file in memory: only a tail as long as the delimiter
// is kept back between chunks. Other parts (form fields) are skipped.
import { validationFailed } from './errors.ts';

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

export interface FilePart { fileName: string; contentType: string | null; bytes: AsyncIterable<Buffer> }

/** The boundary of a multipart/form-data Content-Type, or null. */
export function multipartBoundary(contentType: string): string | null {
  const m = /^multipart\/form-data\s*;.*?boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : null;
}

function headerValue(headers: string, name: string): string | null {
  const m = new RegExp(`^${name}\\s*:\\s*(.*)$`, 'im').exec(headers);
  return m ? m[1].trim() : null;
}

/** The file name from a Content-Disposition value (filename* of RFC 5987 first, then filename). */
export function dispositionFileName(header: string | undefined): string | null {
  if (!header) return null;
  const star = /filename\*\s*=\s*([\w!#$&+.^`|~-]+)'[^']*'([^;]+)/i.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[2].trim());
    } catch { /* fall through to filename= */ }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
  return plain ? (plain[1] ?? plain[2]).replace(/\\(.)/g, '$1') : null;
}

/**
 * Reads up to the first file part and returns its name, type and a stream of its bytes; 422 when
 * the body holds no file part or is not well-formed.
 */
export async function firstFilePart(source: AsyncIterable<Buffer>, boundary: string): Promise<FilePart> {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const it = source[Symbol.asyncIterator]();
  // A leading CRLF makes the first boundary look like every later one.
  let buf: Buffer = Buffer.from('\r\n');
  const more = async (): Promise<boolean> => {
    const r = await it.next();
    if (r.done) return false;
    buf = buf.length ? Buffer.concat([buf, r.value]) : r.value;
    return true;
  };
  const malformed = () => validationFailed({ body: 'multipart body without a file part (a part with a filename)' });
  for (;;) {
    // Find the next delimiter, then the part's headers.
    let at: number;
    while ((at = buf.indexOf(delimiter)) < 0) {
      if (buf.length > delimiter.length) buf = buf.subarray(buf.length - delimiter.length);
      if (!(await more())) throw malformed();
    }
    buf = buf.subarray(at + delimiter.length);
    while (buf.length < 2) if (!(await more())) throw malformed();
    if (buf[0] === 0x2d && buf[1] === 0x2d) throw malformed(); // "--": the closing delimiter
    let end: number;
    while ((end = buf.indexOf(CRLF2)) < 0) {
      if (buf.length > MAX_HEADER_BYTES) throw validationFailed({ body: 'multipart part headers too long' });
      if (!(await more())) throw malformed();
    }
    const headers = buf.subarray(0, end).toString('utf8');
    buf = buf.subarray(end + CRLF2.length);
    const fileName = dispositionFileName(headerValue(headers, 'content-disposition') ?? undefined);
    if (fileName === null) continue; // a plain field: skip to the next delimiter
    return { fileName, contentType: headerValue(headers, 'content-type'), bytes: partBytes() };
  }

  async function* partBytes(): AsyncGenerator<Buffer> {
    for (;;) {
      const at = buf.indexOf(delimiter);
      if (at >= 0) {
        if (at > 0) yield buf.subarray(0, at);
        return;
      }
      // Keep back what could be the start of the delimiter.
      const safe = buf.length - (delimiter.length - 1);
      if (safe > 0) {
        const out = buf.subarray(0, safe);
        buf = buf.subarray(safe);
        yield out;
      }
      if (!(await more())) throw validationFailed({ body: 'multipart body ends inside the file part' });
    }
  }
}
