// Test peers for OIDC sign-in, on loopback:
// - startOidcPeer: a real OpenID Provider (`oidc-provider`) with one confidential client
//   (client_secret_basic, PKCE required, the service's redirect URI) and fixed accounts, whose
//   development login and consent pages a Browser drives like a person would;
// - startFakeOp: a tiny provider whose discovery, JWKS and token endpoint the test controls, for
//   ID tokens a real provider would never mint (alg none, HS256, wrong iss/aud, expired...).
// - Browser: follows redirects across origins with a cookie jar (per host and port; the service's
//   flow cookie comes back to the callback and to redeem as in a real browser) and submits the
//   login/consent forms; it records every answer so that a test can scan them for secrets.
import http from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
// @ts-expect-error -- oidc-provider ships no type declarations (a test peer; used untyped)
import Provider from 'oidc-provider';

export interface Account { email: string; name: string; emailVerified?: boolean }

export interface OidcPeer {
  issuer: string;
  clientId: string;
  /** Every id_token the peer's token endpoint handed out (seen from the peer's side). */
  idTokens: string[];
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const closeServer = (server: http.Server) => new Promise<void>((resolve) => {
  server.closeAllConnections();
  server.close(() => resolve());
});

/** oidc-provider on 127.0.0.1: accounts are keyed by the login typed in its login form. */
export async function startOidcPeer(o: { redirectUri: string; clientId: string; clientSecret: string; accounts: Record<string, Account> }): Promise<OidcPeer> {
  let handler: http.RequestListener = (_req, res) => { res.statusCode = 503; res.end(); };
  const { server, origin } = await listen((req, res) => handler(req, res));
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'peer-rs256', alg: 'RS256', use: 'sig' };
  const provider = new Provider(origin, {
    clients: [{
      client_id: o.clientId, client_secret: o.clientSecret, redirect_uris: [o.redirectUri],
      grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
    }],
    pkce: { required: () => true },
    jwks: { keys: [jwk as any] },
    cookies: { keys: ['oidc-peer-cookie-key-for-tests-only'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The service reads identity from the ID token: put the scopes' claims there.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    ttl: { AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    async findAccount(_ctx: unknown, id: string) {
      const a = o.accounts[id];
      if (!a) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, email: a.email, email_verified: a.emailVerified ?? true, name: a.name }) };
    },
  } as any);
  const idTokens: string[] = [];
  const callback = provider.callback();
  handler = (req, res) => {
    if (req.url?.startsWith('/token')) {
      // Watch the token endpoint's answers (the test looks for the ID token where it must not be).
      const end = res.end.bind(res);
      res.end = ((chunk?: any, ...rest: any[]) => {
        if (chunk) {
          try {
            const t = JSON.parse(Buffer.from(chunk).toString('utf8')).id_token;
            if (typeof t === 'string') idTokens.push(t);
          } catch { /* not JSON */ }
        }
        return end(chunk, ...rest);
      }) as typeof res.end;
    }
    callback(req, res);
  };
  return { issuer: origin, clientId: o.clientId, idTokens, close: () => closeServer(server) };
}

export interface FakeOp {
  issuer: string;
  /** Public JWK served at jwks_uri and the private key signing with it. */
  publicJwk: JWK;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  kid: string;
  /** What the token endpoint answers next: an id_token, or a whole answer (status + JSON). */
  answer: { status: number; body: Record<string, unknown> } | null;
  /** The token requests received: Basic credentials and form fields. */
  tokenRequests: { authorization: string | undefined; form: URLSearchParams }[];
  close(): Promise<void>;
}

/**
 * A provider the test controls: discovery + JWKS of its own RSA key, an authorization endpoint nobody
 * visits, a scripted token endpoint. `issuerOverride` / `tokenEndpointOverride`: what discovery names instead.
 */
export async function startFakeOp(o: { issuerOverride?: string; tokenEndpointOverride?: string } = {}): Promise<FakeOp> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'fake-rs256';
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const op: FakeOp = {
    issuer: '', publicJwk, privateKey, kid, answer: null, tokenRequests: [],
    close: async () => {},
  };
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const { server, origin } = await listen((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/.well-known/openid-configuration') {
      return send(res, 200, {
        issuer: o.issuerOverride ?? op.issuer, authorization_endpoint: `${op.issuer}/authorize`, token_endpoint: o.tokenEndpointOverride ?? `${op.issuer}/token`,
        jwks_uri: `${op.issuer}/jwks`, response_types_supported: ['code'], code_challenge_methods_supported: ['S256'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (path === '/jwks') return send(res, 200, { keys: [publicJwk] });
    if (path === '/token' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        op.tokenRequests.push({ authorization: req.headers.authorization, form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')) });
        const a = op.answer ?? { status: 400, body: { error: 'invalid_grant' } };
        op.answer = null;
        send(res, a.status, a.body);
      });
      return;
    }
    send(res, 404, { error: 'not_found' });
  });
  op.issuer = origin;
  op.close = () => closeServer(server);
  return op;
}

export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export interface Seen { url: string; status: number; headers: Record<string, string>; body: string }

/**
 * A browser: follows redirects (any origin) keeping cookies per host, renders nothing, and on a
 * provider page with a form fills `login`/`password` and submits it. Stops at a URL `stop` accepts
 * (not fetched) and returns it. Every answer is kept in `seen`.
 */
export class Browser {
  readonly seen: Seen[] = [];
  private readonly jar = new Map<string, Map<string, string>>();

  private readonly credentials: { login: string; password: string };
  private readonly headers: Record<string, string>;

  /** `headers` go with every request (e.g. an X-Forwarded-For address of this browser for a service trusting its proxy). */
  constructor(credentials: { login: string; password: string } = { login: '', password: '' }, headers: Record<string, string> = {}) {
    this.credentials = credentials;
    this.headers = headers;
  }

  /** The value of a cookie the browser holds for a host (host:port), or undefined. */
  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name);
  }

  private cookieHeader(url: URL): string | undefined {
    const c = this.jar.get(url.host);
    return c && c.size ? [...c].map(([k, v]) => `${k}=${v}`).join('; ') : undefined;
  }

  /**
   * The Cookie header this browser sends to `url`, or undefined: for a request of this browser made with
   * another client (e.g. the test server's JSON call), whose answer's cookies go back through `keepFrom`.
   */
  cookiesFor(url: string): string | undefined {
    return this.cookieHeader(new URL(url));
  }

  /** Keeps (or removes) the cookies an answer from `url` set, the answer received with another client. */
  keepFrom(url: string, headers: Headers): void {
    this.keep(new URL(url), headers);
  }

  private keep(url: URL, headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let c = this.jar.get(url.host);
      if (!c) this.jar.set(url.host, (c = new Map()));
      if (!value || /expires=Thu, 01 Jan 1970/i.test(line)) c.delete(name);
      else c.set(name, value);
    }
  }

  async fetch(url: string, init: { method?: string; form?: URLSearchParams } = {}): Promise<Seen> {
    const u = new URL(url);
    const headers: Record<string, string> = { ...this.headers };
    const cookie = this.cookieHeader(u);
    if (cookie) headers.cookie = cookie;
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(u, { method: init.method ?? 'GET', headers, body: init.form?.toString(), redirect: 'manual' });
    this.keep(u, res.headers);
    const seen: Seen = { url, status: res.status, headers: headersOf(res.headers), body: await res.text() };
    this.seen.push(seen);
    return seen;
  }

  /** Goes to `url` and on until `stop(url)`; returns that URL. Throws on a dead end. */
  async run(url: string, stop: (url: string) => boolean, maxSteps = 20): Promise<string> {
    let next: { url: string; method?: string; form?: URLSearchParams } = { url };
    for (let i = 0; i < maxSteps; i++) {
      if (stop(next.url)) return next.url;
      const r = await this.fetch(next.url, next);
      if (r.status >= 300 && r.status < 400 && r.headers.location) {
        next = { url: new URL(r.headers.location, next.url).href };
        continue;
      }
      const form = parseForm(r.body);
      if (r.status === 200 && form) {
        const fields = new URLSearchParams(form.hidden);
        if (form.inputs.includes('login')) fields.set('login', this.credentials.login);
        if (form.inputs.includes('password')) fields.set('password', this.credentials.password);
        next = { url: new URL(form.action, next.url).href, method: 'POST', form: fields };
        continue;
      }
      throw new Error(`browser stuck at ${next.url}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    }
    throw new Error('browser: too many steps');
  }
}

/** A Headers object as a plain record (forEach: typed alike under the DOM and the Node libraries). */
export function headersOf(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => { out[k] = v; });
  return out;
}

/** The first POST form of a page: its action, hidden fields and the names of its other inputs. */
function parseForm(html: string): { action: string; hidden: [string, string][]; inputs: string[] } | null {
  const m = /<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!m) return null;
  const unescape = (s: string) => s.replace(/&#x2F;/g, '/').replace(/&#x3D;/g, '=').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  const hidden: [string, string][] = [];
  const inputs: string[] = [];
  for (const i of m[2].matchAll(/<input([^>]*)>/gi)) {
    const name = /name="([^"]*)"/.exec(i[1])?.[1];
    if (!name) continue;
    if (/type="hidden"/.test(i[1])) hidden.push([name, unescape(/value="([^"]*)"/.exec(i[1])?.[1] ?? '')]);
    else inputs.push(name);
  }
  return { action: unescape(m[1]), hidden, inputs };
}
