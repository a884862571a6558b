// multipart/form-data for the transcription and video routes, parsed from a buffered body (uploads
// to a test model are small; the limit is enforced while reading). Boundary and file-name parsing are
// the asset upload's; this adds what that streaming reader skips: the plain fields (model, language,
// prompt, ...).
import { dispositionFileName, multipartBoundary } from '../../src/kernel/multipart.ts';
import { HttpError } from './http.ts';

export interface Part { name: string; fileName: string | null; contentType: string | null; data: Buffer }

const CRLF2 = Buffer.from('\r\n\r\n');

function header(headers: string, name: string): string | null {
  const m = new RegExp(`^${name}\\s*:\\s*(.*)$`, 'im').exec(headers);
  return m ? m[1].trim() : null;
}

function fieldName(disposition: string | null): string {
  const m = disposition ? /;\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(disposition) : null;
  return m ? (m[1] ?? m[2]).replace(/\\(.)/g, '$1') : '';
}

/**
 * Every part of the body; 400 when the Content-Type is not multipart or the body is malformed. Part
 * data are views of `body` (subarray), not copies: an upload is held once, as read.
 */
export function parseMultipart(contentType: string | undefined, body: Buffer): Part[] {
  const boundary = multipartBoundary(contentType ?? '');
  if (!boundary) throw new HttpError(400, 'expected a multipart/form-data body with a boundary');
  const malformed = () => new HttpError(400, 'malformed multipart/form-data body');
  // Every delimiter follows a CRLF except one opening the body: that one is taken as if a CRLF came
  // just before the body (at -2), so the loop treats all alike.
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const opening = delimiter.subarray(2);
  const first = body.subarray(0, opening.length).equals(opening) ? -2 : body.indexOf(delimiter);
  if (first === -1) throw malformed();
  const parts: Part[] = [];
  for (let at = first; ;) {
    const after = at + delimiter.length;
    if (body[after] === 0x2d && body[after + 1] === 0x2d) return parts; // "--": the closing delimiter
    const headersEnd = body.indexOf(CRLF2, after);
    const next = headersEnd < 0 ? -1 : body.indexOf(delimiter, headersEnd + CRLF2.length);
    if (next < 0) throw malformed();
    const headers = body.subarray(after, headersEnd).toString('utf8');
    const disposition = header(headers, 'content-disposition');
    parts.push({
      name: fieldName(disposition),
      fileName: dispositionFileName(disposition ?? undefined),
      contentType: header(headers, 'content-type'),
      data: body.subarray(headersEnd + CRLF2.length, next),
    });
    at = next;
  }
}

/** Whether a Content-Type names multipart/form-data. */
export const isMultipart = (contentType: string | undefined): boolean => /^\s*multipart\/form-data\s*(;|$)/i.test(contentType ?? '');

/** A form's plain fields as strings (a repeated name keeps its last value) and its file parts. */
export function formOf(parts: Part[]): { fields: Record<string, string>; files: Part[] } {
  const fields: Record<string, string> = {};
  const files: Part[] = [];
  for (const p of parts) {
    if (p.fileName === null) fields[p.name] = p.data.toString('utf8');
    else files.push(p);
  }
  return { fields, files };
}
