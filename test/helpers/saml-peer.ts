// Test peer for SAML sign-in, on loopback: a SAML 2.0 identity provider built with `samlify`. Its
// GET /sso takes the service's HTTP-Redirect AuthnRequest (samlify inflates and parses it), "logs
// in" the person the test chose and answers, like a real IdP, an HTML page whose form posts the
// signed SAMLResponse and the RelayState to the service's assertion consumer. Tests may alter the
// values the IdP puts in its (then signed) response to see the service refuse them.
// Also: builders and signers for documents forged with xml-crypto (negative tests), and a Browser
// that records every answer it sees (for the secret scan).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { SignedXml } from 'xml-crypto';

// samlify is loaded without its type declarations: they pull in an old @xmldom/xmldom whose
// `/// <reference lib="dom" />` would change the global fetch/Headers types of the whole project.
interface SamlifySp { entityMeta: { getAssertionConsumerService(binding: string): string | string[]; getEntityID(): string } }
interface SamlifyIdp {
  parseLoginRequest(sp: SamlifySp, binding: 'redirect', req: { query: Record<string, string> }): Promise<{ extract: { request: { id: string } } }>;
  createLoginResponse(sp: SamlifySp, info: unknown, binding: 'post', user: { email: string }, o: {
    relayState?: string; customTagReplacement: (template: string) => { id: string; context: string };
  }): Promise<{ context: string; entityEndpoint: string; relayState?: string }>;
}
const samlify = createRequire(import.meta.url)('samlify') as {
  setSchemaValidator(v: { validate: (xml: string) => Promise<string> }): void;
  IdentityProvider(settings: Record<string, unknown>): SamlifyIdp;
  ServiceProvider(settings: { metadata: string }): SamlifySp;
  SamlLib: { defaultLoginResponseTemplate: { context: string }; replaceTagsByValue(xml: string, values: Record<string, unknown>): string };
};

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'sso');
export const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name), 'utf8');
export const IDP_KEY = fixture('saml-idp.key');
export const IDP_CERT = fixture('saml-idp.crt');
export const ATTACKER_KEY = fixture('saml-attacker.key');
export const ATTACKER_CERT = fixture('saml-attacker.crt');
/** The base64 body of a PEM certificate (what must never show up in an answer, a log line or the audit). */
export const certBody = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

// samlify insists on an XML schema validator; the service under test does its own checking.
samlify.setSchemaValidator({ validate: async () => 'skipped' });

export interface IdpUser { nameId: string; email: string; name: string }

/** Values of samlify's login response template (ID, Destination, Audience, SubjectRecipient, NameID, ...). */
export type TemplateValues = Record<string, string | null>;

export interface SamlPeer {
  origin: string;
  entityId: string;
  ssoUrl: string;
  /** Who is logged in at the IdP. */
  user: IdpUser | null;
  /** Changes the next responses' template values (before signing), e.g. { Audience: 'someone-else' }. */
  tweak: (v: TemplateValues) => TemplateValues;
  /** The service provider, from the service's metadata (GET .../metadata). */
  useServiceProvider(metadataXml: string): void;
  /** Every AuthnRequest the IdP received (decoded XML). */
  requests: string[];
  close(): Promise<void>;
}

const closeServer = (server: http.Server) => new Promise<void>((resolve) => {
  server.closeAllConnections();
  server.close(() => resolve());
});

const htmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export const ATTRIBUTE_NAMES = { email: 'mail', name: 'displayName' };

function attributeStatement(user: IdpUser): string {
  const one = (name: string, value: string) => `<saml:Attribute Name="${name}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">`
    + `<saml:AttributeValue xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="xs:string">${xmlEscape(value)}</saml:AttributeValue></saml:Attribute>`;
  return `<saml:AttributeStatement>${one(ATTRIBUTE_NAMES.email, user.email)}${one(ATTRIBUTE_NAMES.name, user.name)}</saml:AttributeStatement>`;
}

/** The values of a login response answering `inResponseTo`, valid from now for five minutes. */
export function responseValues(o: { idpEntityId: string; spEntityId: string; acsUrl: string; inResponseTo: string; user: IdpUser; now?: Date }): TemplateValues {
  const now = o.now ?? new Date();
  const later = new Date(now.getTime() + 5 * 60_000).toISOString();
  return {
    ID: `_${randomUUID()}`, AssertionID: `_${randomUUID()}`, Destination: o.acsUrl, Audience: o.spEntityId, SubjectRecipient: o.acsUrl,
    Issuer: o.idpEntityId, IssueInstant: now.toISOString(), StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    ConditionsNotBefore: now.toISOString(), ConditionsNotOnOrAfter: later, SubjectConfirmationDataNotOnOrAfter: later,
    NameIDFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified', NameID: o.user.nameId, InResponseTo: o.inResponseTo,
    AuthnStatement: `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="_${randomUUID()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`,
  };
}

/** The template's Assertion opening and Issuer: its Issuer gets a tag of its own (AssertionIssuer, default Issuer). */
const ASSERTION_ISSUER = 'ID="{AssertionID}" Version="2.0" IssueInstant="{IssueInstant}"><saml:Issuer>{Issuer}</saml:Issuer>';

/**
 * samlify's login response template filled with `values` (unsigned); AttributeStatement carries the
 * user's mail and displayName. A null value drops its attribute (e.g. SubjectConfirmationDataNotOnOrAfter)
 * or element (AuthnStatement). `AssertionIssuer` sets the Assertion's Issuer alone (default: Issuer).
 */
export function fillResponse(values: TemplateValues, user: IdpUser): string {
  const { AuthnStatement, AssertionIssuer, ...rest } = values;
  const base = samlify.SamlLib.defaultLoginResponseTemplate.context;
  if (!base.includes(ASSERTION_ISSUER)) throw new Error('samlify\'s login response template changed: no Assertion Issuer to retag');
  const template = base
    .replace(ASSERTION_ISSUER, ASSERTION_ISSUER.replace('{Issuer}', '{AssertionIssuer}'))
    .replace('{AuthnStatement}', AuthnStatement ?? '')
    .replace('{AttributeStatement}', attributeStatement(user));
  return samlify.SamlLib.replaceTagsByValue(template, { ...rest, AssertionIssuer: AssertionIssuer === undefined ? rest.Issuer : AssertionIssuer });
}

/**
 * Signs an element of `xml` (enveloped, exclusive c14n, RSA-SHA256) the way IdPs do: the Signature
 * placed after the element's Issuer, KeyInfo carrying `cert`.
 */
export function signElement(xml: string, which: 'Assertion' | 'Response', key: string, cert: string, o: { signatureAlgorithm?: string; digestAlgorithm?: string } = {}): string {
  const elementXpath = which === 'Response' ? "/*[local-name(.)='Response']" : "/*[local-name(.)='Response']/*[local-name(.)='Assertion']";
  const sig = new SignedXml({ privateKey: key, publicCert: cert });
  sig.signatureAlgorithm = o.signatureAlgorithm ?? 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
  sig.canonicalizationAlgorithm = 'http://www.w3.org/2001/10/xml-exc-c14n#';
  sig.addReference({
    xpath: elementXpath,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: o.digestAlgorithm ?? 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, { prefix: 'ds', location: { reference: `${elementXpath}/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}

export async function startSamlPeer(o: { entityId: string; key?: string; cert?: string }): Promise<SamlPeer> {
  let sp: SamlifySp | null = null;
  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: Error) => {
      res.statusCode = 500;
      res.end(`IdP error: ${err.message}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const idp = samlify.IdentityProvider({
    entityID: o.entityId,
    privateKey: o.key ?? IDP_KEY,
    signingCert: o.cert ?? IDP_CERT,
    wantAuthnRequestsSigned: false,
    nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified'],
    singleSignOnService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${origin}/sso` }],
    singleLogoutService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${origin}/slo` }],
  });
  const peer: SamlPeer = {
    origin, entityId: o.entityId, ssoUrl: `${origin}/sso`, user: null, tweak: (v) => v, requests: [],
    useServiceProvider(metadataXml) { sp = samlify.ServiceProvider({ metadata: metadataXml }); },
    close: () => closeServer(server),
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname !== '/sso' || req.method !== 'GET') { res.statusCode = 404; res.end(); return; }
    if (!sp || !peer.user) throw new Error('the IdP has no service provider or no logged-in user');
    const query = Object.fromEntries(url.searchParams);
    peer.requests.push(inflateRawSync(Buffer.from(query.SAMLRequest ?? '', 'base64')).toString('utf8'));
    const info = await idp.parseLoginRequest(sp, 'redirect', { query });
    const user = peer.user;
    const acsUrl = sp.entityMeta.getAssertionConsumerService('post') as string;
    const values = peer.tweak(responseValues({
      idpEntityId: o.entityId, spEntityId: sp.entityMeta.getEntityID(), acsUrl, inResponseTo: info.extract.request.id, user,
    }));
    const answer = await idp.createLoginResponse(sp, info, 'post', { email: user.email }, {
      relayState: query.RelayState,
      customTagReplacement: () => ({ id: values.ID as string, context: fillResponse(values, user) }),
    });
    const page = `<!doctype html><html><body onload="document.forms[0].submit()"><form method="post" action="${htmlEscape(answer.entityEndpoint)}">`
      + `<input type="hidden" name="SAMLResponse" value="${htmlEscape(answer.context)}">`
      + (answer.relayState !== undefined ? `<input type="hidden" name="RelayState" value="${htmlEscape(answer.relayState)}">` : '')
      + '<noscript><button type="submit">Continue</button></noscript></form></body></html>';
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page);
  }
  return peer;
}

/** The auto-posting form of an IdP page: where it posts and what. */
export function parseAutoPostForm(html: string): { action: string; fields: Record<string, string> } {
  const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1];
  if (!action) throw new Error('no form on the IdP page');
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]] = unescape(m[2]);
  return { action: unescape(action), fields };
}

/** The AuthnRequest inside a service's redirect to the IdP: decoded XML, its ID and the relay state. */
export function readRedirect(location: string): { xml: string; id: string; relayState: string; url: URL } {
  const url = new URL(location);
  const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
  const id = /\sID="([^"]+)"/.exec(xml)?.[1];
  if (!id) throw new Error('no AuthnRequest ID');
  return { xml, id, relayState: url.searchParams.get('RelayState') ?? '', url };
}
