// Verification of a SAML 2.0 Response (HTTP-POST binding) against a pinned IdP certificate. Fails
// closed: any doubt is a SamlRejected (400 malformed, 401 not acceptable) with a short reason that
// never quotes the document. Order: no DTD at all (a string check before parsing: no DOCTYPE, no
// entity expansion, no XXE); a strict parse; no comments or processing instructions; unique IDs;
// exactly one Assertion (no EncryptedAssertion) directly under the Response; every Signature
// verified with ONLY the pinned certificate (KeyInfo ignored) and an algorithm allow-list, each
// covering exactly its parent; the identity and every condition read ONLY from the XML that
// xml-crypto returns as signed (getSignedReferences()), parsed again.
import { X509Certificate, createPublicKey, type KeyObject } from 'node:crypto';
import { DOMParser, onWarningStopParsing, type Document, type Element, type Node } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';

/** Allowed clock difference between the IdP and this service for NotBefore / NotOnOrAfter. */
export const SAML_CLOCK_SKEW_MS = 60_000;
/** Largest decoded SAMLResponse accepted. */
export const SAML_MAX_RESPONSE_BYTES = 256 * 1024;

export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;
const STATUS_SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';

export const ALGORITHMS = {
  signature: ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512'],
  digest: ['http://www.w3.org/2001/04/xmlenc#sha256', 'http://www.w3.org/2001/04/xmlenc#sha512'],
  c14n: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  enveloped: 'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
} as const;

export class SamlRejected extends Error {
  readonly status: 400 | 401;
  readonly reason: string;
  constructor(status: 400 | 401, reason: string) {
    super(reason);
    this.name = 'SamlRejected';
    this.status = status;
    this.reason = reason;
  }
}

const malformed = (reason: string) => new SamlRejected(400, reason);
const rejected = (reason: string) => new SamlRejected(401, reason);

export interface SamlExpectations {
  /** The pinned IdP signing certificate (PEM, or the base64 DER body). */
  certificate: string;
  idpEntityId: string;
  spEntityId: string;
  /** This service's assertion consumer URL: Destination and Recipient must equal it. */
  acsUrl: string;
  now: Date;
}

export interface SamlIdentity {
  /** The request this answers (from the signed SubjectConfirmationData). */
  inResponseTo: string;
  nameId: string;
  nameIdFormat: string | null;
  /** Attribute name -> values, from the signed assertion. */
  attributes: Record<string, string[]>;
}

/** The SAMLResponse form field: base64 -> UTF-8 XML, size-limited, any DTD refused before parsing. */
export function decodeSamlResponse(field: string): string {
  const compact = field.replace(/[\r\n\t ]/g, '');
  if (compact === '' || compact.length > Math.ceil(SAML_MAX_RESPONSE_BYTES / 3) * 4 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    throw malformed('SAMLResponse is not base64 of an acceptable size');
  }
  let xml: string;
  try {
    xml = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
  } catch {
    throw malformed('SAMLResponse is not UTF-8 text');
  }
  refuseDtd(xml);
  return xml;
}

/**
 * A DTD (DOCTYPE, ENTITY, ELEMENT, ATTLIST, conditional sections) can only be written as "<!" that
 * does not start a comment or CDATA section; a SAML message never needs one. Refused as a string,
 * before any parser sees it: no entity is ever expanded, no external entity fetched.
 */
export function refuseDtd(xml: string): void {
  if (/<!(?!--|\[CDATA\[)/.test(xml)) throw malformed('a DOCTYPE or other DTD declaration is not accepted');
}

/** A strict parse: any parser warning or error refuses the document. */
export function parseStrict(xml: string): Document {
  refuseDtd(xml);
  try {
    const doc = new DOMParser({ onError: onWarningStopParsing, locator: false }).parseFromString(xml, 'text/xml');
    if (!doc.documentElement) throw new Error('no document element');
    return doc;
  } catch {
    throw malformed('the SAML response is not well-formed XML');
  }
}

const ELEMENT = 1, TEXT = 3, CDATA = 4, PI = 7, COMMENT = 8;

function* descendants(node: Node): Generator<Node> {
  for (let c = node.firstChild; c; c = c.nextSibling) {
    yield c;
    yield* descendants(c);
  }
}

const isEl = (n: Node | null | undefined, ns: string, local: string): n is Element =>
  !!n && n.nodeType === ELEMENT && (n as Element).namespaceURI === ns && (n as Element).localName === local;

function children(el: Element, ns: string, local: string): Element[] {
  const out: Element[] = [];
  for (let c = el.firstChild; c; c = c.nextSibling) if (isEl(c, ns, local)) out.push(c);
  return out;
}

function onlyChild(el: Element, ns: string, local: string, what: string, required = true): Element | null {
  const found = children(el, ns, local);
  if (found.length > 1) throw rejected(`more than one ${what}`);
  if (found.length === 0 && required) throw rejected(`${what} is missing`);
  return found[0] ?? null;
}

/** The text of an element made only of text: a comment, processing instruction or child element refuses it. */
function textOf(el: Element, what: string): string {
  let s = '';
  for (let c = el.firstChild; c; c = c.nextSibling) {
    if (c.nodeType !== TEXT && c.nodeType !== CDATA) throw rejected(`${what} contains markup`);
    s += (c as unknown as { data: string }).data;
  }
  return s.trim();
}

const ID_ATTRS = new Set(['ID', 'Id', 'id']);

/** The structural checks on the whole received document (before any signature is looked at). */
function inspectDocument(doc: Document): { response: Element; assertion: Element } {
  const response = doc.documentElement!;
  if (!isEl(response, NS.protocol, 'Response')) throw rejected('the document is not a SAML 2.0 Response');
  const ids = new Set<string>();
  let assertions = 0;
  for (const n of descendants(doc)) {
    if (n.nodeType === COMMENT || n.nodeType === PI) throw rejected('comments and processing instructions are not accepted');
    if (n.nodeType !== ELEMENT) continue;
    const el = n as Element;
    if (el.localName === 'Assertion' || el.localName === 'EncryptedAssertion') assertions += 1;
    if (el.localName === 'EncryptedAssertion') throw rejected('encrypted assertions are not accepted');
    for (let i = 0; i < el.attributes.length; i++) {
      const a = el.attributes.item(i)!;
      if (!ID_ATTRS.has(a.localName ?? a.name)) continue;
      if (ids.has(a.value)) throw rejected('duplicate ID attributes');
      ids.add(a.value);
    }
  }
  if (assertions !== 1) throw rejected(assertions === 0 ? 'the response has no assertion' : 'the response must carry exactly one assertion');
  const assertion = onlyChild(response, NS.assertion, 'Assertion', 'assertion directly under the Response')!;
  return { response, assertion };
}

function certificateKey(certificate: string): KeyObject {
  const body = certificate.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  try {
    const x509 = new X509Certificate(Buffer.from(body, 'base64'));
    return createPublicKey(x509.publicKey.export({ type: 'spki', format: 'pem' }));
  } catch {
    throw new Error('the pinned IdP certificate is not a readable X.509 certificate');
  }
}

function attr(el: Element, name: string): string | null {
  return el.hasAttribute(name) ? el.getAttribute(name) : null;
}

/** Checks a Signature's algorithms and that its one Reference covers exactly its parent element. */
function checkSignatureShape(sig: Element, parent: Element): void {
  const signedInfo = onlyChild(sig, NS.dsig, 'SignedInfo', 'SignedInfo')!;
  const c14n = onlyChild(signedInfo, NS.dsig, 'CanonicalizationMethod', 'CanonicalizationMethod')!;
  if (attr(c14n, 'Algorithm') !== ALGORITHMS.c14n) throw rejected('canonicalization algorithm not allowed');
  const method = onlyChild(signedInfo, NS.dsig, 'SignatureMethod', 'SignatureMethod')!;
  if (!(ALGORITHMS.signature as readonly string[]).includes(attr(method, 'Algorithm') ?? '')) throw rejected('signature algorithm not allowed');
  const refs = children(signedInfo, NS.dsig, 'Reference');
  if (refs.length !== 1) throw rejected('a signature must have exactly one reference');
  const parentId = attr(parent, 'ID');
  if (!parentId || attr(refs[0], 'URI') !== `#${parentId}`) throw rejected('the signature does not cover the element it is in');
  const transforms = onlyChild(refs[0], NS.dsig, 'Transforms', 'Transforms', false);
  const algorithms = transforms ? children(transforms, NS.dsig, 'Transform').map((t) => attr(t, 'Algorithm')) : [];
  if (!algorithms.includes(ALGORITHMS.enveloped) || algorithms.some((a) => a !== ALGORITHMS.enveloped && a !== ALGORITHMS.c14n)) {
    throw rejected('signature transforms not allowed');
  }
  const digest = onlyChild(refs[0], NS.dsig, 'DigestMethod', 'DigestMethod')!;
  if (!(ALGORITHMS.digest as readonly string[]).includes(attr(digest, 'Algorithm') ?? '')) throw rejected('digest algorithm not allowed');
}

/** Verifies one enveloped signature with the pinned key only; answers the canonical XML it signs. */
function verifiedContent(xml: string, sig: Element, parent: Element, key: KeyObject): string {
  checkSignatureShape(sig, parent);
  const verifier = new SignedXml({ publicCert: key, getCertFromKeyInfo: () => null });
  // Only the allow-listed algorithms are even known to the verifier (no HMAC, no SHA-1).
  verifier.SignatureAlgorithms = Object.fromEntries(ALGORITHMS.signature.map((a) => [a, verifier.SignatureAlgorithms[a]]));
  verifier.HashAlgorithms = Object.fromEntries(ALGORITHMS.digest.map((a) => [a, verifier.HashAlgorithms[a]]));
  verifier.CanonicalizationAlgorithms = Object.fromEntries(
    [ALGORITHMS.c14n, ALGORITHMS.enveloped].map((a) => [a, verifier.CanonicalizationAlgorithms[a]]));
  let valid: boolean;
  try {
    // xmldom's Node.prototype.toString() serializes the node (its XMLSerializer); the types omit it.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- see above
    verifier.loadSignature(sig.toString());
    valid = verifier.checkSignature(xml);
  } catch {
    valid = false;
  }
  const signed = valid ? verifier.getSignedReferences() : [];
  if (!valid || signed.length !== 1) throw rejected('the signature is not valid for the pinned IdP certificate');
  return signed[0];
}

function signatureOf(el: Element): Element | null {
  const sigs = children(el, NS.dsig, 'Signature');
  if (sigs.length > 1) throw rejected('more than one signature on one element');
  return sigs[0] ?? null;
}

function instant(value: string | null, what: string): number | null {
  if (value === null) return null;
  const t = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(t)) throw rejected(`${what} is not a valid time`);
  return t;
}

function checkWindow(el: Element, now: number, what: string, requireEnd: boolean): void {
  const notBefore = instant(attr(el, 'NotBefore'), `${what} NotBefore`);
  const notOnOrAfter = instant(attr(el, 'NotOnOrAfter'), `${what} NotOnOrAfter`);
  if (requireEnd && notOnOrAfter === null) throw rejected(`${what} has no NotOnOrAfter`);
  if (notBefore !== null && now + SAML_CLOCK_SKEW_MS < notBefore) throw rejected(`${what} is not yet valid`);
  if (notOnOrAfter !== null && now - SAML_CLOCK_SKEW_MS >= notOnOrAfter) throw rejected(`${what} has expired`);
}

/** The only element of the signed, canonical XML (parsed again), checked to be what was signed. */
function reparsed(canonical: string, ns: string, local: string, id: string): Element {
  const root = parseStrict(canonical).documentElement!;
  if (!isEl(root, ns, local) || attr(root, 'ID') !== id) throw rejected('the signed content is not the expected element');
  return root;
}

/**
 * Verifies a decoded SAML Response for this SP and answers the identity it carries, read only from
 * signed content. Throws SamlRejected; never returns partially checked data.
 */
export function verifySamlResponse(xml: string, x: SamlExpectations): SamlIdentity {
  const doc = parseStrict(xml);
  const { response, assertion } = inspectDocument(doc);
  if (attr(response, 'Version') !== '2.0') throw rejected('the response is not SAML 2.0');
  const key = certificateKey(x.certificate);

  // Every signature present must be valid; at least the assertion or the whole response must be signed.
  const responseSig = signatureOf(response);
  const assertionSig = signatureOf(assertion);
  for (const n of descendants(doc)) {
    if (isEl(n, NS.dsig, 'Signature') && n !== responseSig && n !== assertionSig) throw rejected('a signature in an unexpected place');
  }
  if (!responseSig && !assertionSig) throw rejected('the response and its assertion are unsigned');
  const assertionId = attr(assertion, 'ID') ?? '';
  const responseId = attr(response, 'ID') ?? '';
  const signedResponse = responseSig ? reparsed(verifiedContent(xml, responseSig, response, key), NS.protocol, 'Response', responseId) : null;
  let signedAssertion: Element;
  if (assertionSig) {
    signedAssertion = reparsed(verifiedContent(xml, assertionSig, assertion, key), NS.assertion, 'Assertion', assertionId);
  } else {
    const inner = children(signedResponse!, NS.assertion, 'Assertion');
    if (inner.length !== 1 || attr(inner[0], 'ID') !== assertionId) throw rejected('the signed response does not carry the assertion');
    signedAssertion = inner[0];
  }

  // The envelope: signed when the response is, else as received (only consistency checks rely on it).
  const envelope = signedResponse ?? response;
  const status = onlyChild(envelope, NS.protocol, 'Status', 'Status')!;
  const code = attr(onlyChild(status, NS.protocol, 'StatusCode', 'StatusCode')!, 'Value') ?? '';
  if (code !== STATUS_SUCCESS) throw rejected(/^urn:[\w:.-]{1,120}$/.test(code) ? `the IdP answered ${code}` : 'the IdP did not answer Success');
  if (attr(envelope, 'Destination') !== x.acsUrl) throw rejected('the response Destination is not this assertion consumer');
  const envelopeIssuer = onlyChild(envelope, NS.assertion, 'Issuer', 'response Issuer', false);
  if (envelopeIssuer && textOf(envelopeIssuer, 'Issuer') !== x.idpEntityId) throw rejected('the response Issuer is not the configured IdP');

  // The assertion, from signed content only.
  const now = x.now.getTime();
  if (attr(signedAssertion, 'Version') !== '2.0') throw rejected('the assertion is not SAML 2.0');
  if (textOf(onlyChild(signedAssertion, NS.assertion, 'Issuer', 'assertion Issuer')!, 'Issuer') !== x.idpEntityId) {
    throw rejected('the assertion Issuer is not the configured IdP');
  }
  const conditions = onlyChild(signedAssertion, NS.assertion, 'Conditions', 'Conditions')!;
  checkWindow(conditions, now, 'the assertion', false);
  const restrictions = children(conditions, NS.assertion, 'AudienceRestriction');
  if (restrictions.length === 0) throw rejected('the assertion has no audience restriction');
  for (const r of restrictions) {
    if (!children(r, NS.assertion, 'Audience').some((a) => textOf(a, 'Audience') === x.spEntityId)) throw rejected('the assertion is for another audience');
  }
  const subject = onlyChild(signedAssertion, NS.assertion, 'Subject', 'Subject')!;
  const nameIdEl = onlyChild(subject, NS.assertion, 'NameID', 'NameID')!;
  const nameId = textOf(nameIdEl, 'NameID');
  if (nameId === '' || nameId.length > 1024) throw rejected('the NameID is empty or too long');
  const confirmations = children(subject, NS.assertion, 'SubjectConfirmation').filter((c) => attr(c, 'Method') === BEARER);
  if (confirmations.length !== 1) throw rejected('the assertion needs exactly one bearer subject confirmation');
  const data = onlyChild(confirmations[0], NS.assertion, 'SubjectConfirmationData', 'SubjectConfirmationData')!;
  if (attr(data, 'Recipient') !== x.acsUrl) throw rejected('the Recipient is not this assertion consumer');
  if (attr(data, 'NotBefore') !== null) throw rejected('a bearer confirmation must not carry NotBefore');
  checkWindow(data, now, 'the subject confirmation', true);
  // Web Browser SSO profile (4.1.4.2): the assertion states how the person authenticated.
  if (children(signedAssertion, NS.assertion, 'AuthnStatement').length === 0) throw rejected('the assertion has no AuthnStatement');
  const inResponseTo = attr(data, 'InResponseTo');
  if (!inResponseTo) throw rejected('the assertion answers no request (unsolicited responses are not accepted)');
  const envelopeInResponseTo = attr(envelope, 'InResponseTo');
  if (envelopeInResponseTo !== null && envelopeInResponseTo !== inResponseTo) throw rejected('InResponseTo differs between response and assertion');

  const attributes: Record<string, string[]> = {};
  for (const statement of children(signedAssertion, NS.assertion, 'AttributeStatement')) {
    for (const a of children(statement, NS.assertion, 'Attribute')) {
      const name = attr(a, 'Name');
      if (!name) continue;
      const values = children(a, NS.assertion, 'AttributeValue').map((v) => textOf(v, 'AttributeValue'));
      (attributes[name] ??= []).push(...values);
    }
  }
  return { inResponseTo, nameId, nameIdFormat: attr(nameIdEl, 'Format'), attributes };
}
