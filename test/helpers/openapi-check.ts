// Every answer a test receives through the server helper is held to the OpenAPI document the server
// serves (GET /api/openapi.json): a success status the operation does not list, a JSON body that does
// not match the operation's schema (ajv, JSON Schema 2020-12, with the formats the document uses), a
// success answer without a documented body, or a media type the operation does not name, fails the
// request's test. So the document cannot drift from the code: a field added to a presenter and not
// to its view, or a view that says more than the code does, shows up in the first test that sees it.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

interface Operation { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }
interface Document { paths: Record<string, Record<string, Operation>> }

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export class AnswerChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly routes: { method: string; re: RegExp; rank: string; path: string }[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  private readonly doc: Document;

  constructor(doc: Document) {
    this.doc = doc;
    this.ajv.addFormat('date-time', { type: 'string', validate: (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) });
    this.ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    this.ajv.addFormat('uri', { type: 'string', validate: (s: string) => URL.canParse(s) });
    this.ajv.addFormat('uri-reference', { type: 'string', validate: (s: string) => URL.canParse(s, 'http://x.invalid/') });
    this.ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/);
    this.ajv.addSchema(doc, 'openapi');
    for (const [path, ops] of Object.entries(doc.paths)) {
      const segs = path.split('/').filter(Boolean);
      const re = new RegExp(`^/${segs.map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^$()[\]\\|]/g, '\\$&'))).join('/')}/?$`);
      // the router tries literal segments before parameters, left to right
      const rank = segs.map((s) => (s.startsWith('{') ? '1' : '0')).join('');
      for (const method of Object.keys(ops)) this.routes.push({ method: method.toUpperCase(), re, rank, path });
    }
  }

  /** The documented path of a request, or null for paths outside the document (the console's pages, static files). */
  operationOf(method: string, urlPath: string): { path: string; op: Operation; method: string } | null {
    const m = method === 'HEAD' ? 'GET' : method;
    const pathname = urlPath.split('?')[0];
    const found = this.routes.filter((r) => r.method === m && r.re.test(pathname))
      .sort((a, b) => (a.rank.length - b.rank.length) || a.rank.localeCompare(b.rank));
    if (!found.length) return null;
    const path = found[0].path;
    return { path, op: this.doc.paths[path][m.toLowerCase()], method: m.toLowerCase() };
  }

  /** What is wrong with an answer, or null when it is what the document says. Only success answers (2xx) are judged. */
  problem(method: string, urlPath: string, status: number, contentType: string | null, body: unknown): string | null {
    if (status < 200 || status > 299) return null;
    const found = this.operationOf(method, urlPath);
    if (!found) return null;
    const documented = found.op.responses?.[String(status)];
    if (!documented) return `status ${status} is not a documented answer of ${found.method.toUpperCase()} ${found.path}`;
    if (status === 204 || method === 'HEAD') return null;
    const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
    const content = documented.content ?? {};
    if (!Object.keys(content).length) return `${found.method.toUpperCase()} ${found.path} answered ${status} ${type || 'without a type'}, but the document describes no body`;
    if (!(type in content)) return `${found.method.toUpperCase()} ${found.path} answered ${type}, the document names ${Object.keys(content).join(', ')}`;
    if (type !== 'application/json' && !type.endsWith('+json')) return null; // JSON, and JSON media types such as application/scim+json
    const pointer = `openapi#/paths/${escape(found.path)}/${found.method}/responses/${status}/content/${escape(type)}/schema`;
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.getSchema(pointer);
      if (!validate) return `no schema at ${pointer}`;
      this.validators.set(pointer, validate);
    }
    if (validate(body)) return null;
    return `${found.method.toUpperCase()} ${found.path} ${status}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body', separator: '; ' })}`;
  }
}

const escape = (path: string) => path.replace(/~/g, '~0').replace(/\//g, '~1');

let loaded: Promise<AnswerChecker> | undefined;

/** The checker for this process's code, from the document the first server serves (the same for every server of one build). */
export function answerChecker(baseUrl: string): Promise<AnswerChecker> {
  loaded ??= fetch(`${baseUrl}/api/openapi.json`).then(async (res) => new AnswerChecker(await res.json() as Document));
  return loaded;
}

/** Throws when an answer is not what the served document says. */
export async function checkAnswer(baseUrl: string, method: string, urlPath: string, status: number, contentType: string | null, body: unknown): Promise<void> {
  if (urlPath.split('?')[0] === '/api/openapi.json') return;
  const problem = (await answerChecker(baseUrl)).problem(method, urlPath, status, contentType, body);
  if (problem) throw new Error(`the answer does not match the OpenAPI document: ${problem}`);
}
