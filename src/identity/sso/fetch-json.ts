// GET a provider's JSON document (OIDC discovery, a key set) the careful way: no redirects, a time-out,
// a size limit; anything else is a FetchJsonError with a short reason (never the document).
const TIMEOUT_MS = 5_000;
const MAX_DOCUMENT = 512 * 1024;

export class FetchJsonError extends Error {}

/** GET a JSON document: no redirects, a timeout, a size limit; FetchJsonError with a short reason otherwise. */
export async function fetchJson(url: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'manual', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    if (e.name === 'TimeoutError') throw new FetchJsonError(`no answer within ${TIMEOUT_MS / 1000} s`);
    throw new FetchJsonError(`cannot connect (${e.cause?.code ?? 'network error'})`);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new FetchJsonError(`answered HTTP ${res.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (let r = await reader?.read(); reader && r && !r.done; r = await reader.read()) {
    size += r.value.length;
    if (size > MAX_DOCUMENT) {
      await reader.cancel();
      throw new FetchJsonError(`document larger than ${MAX_DOCUMENT} bytes`);
    }
    chunks.push(r.value);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new FetchJsonError('is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new FetchJsonError('is not a JSON object');
  return doc as Record<string, unknown>;
}
