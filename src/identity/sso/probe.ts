// Probing a provider's configuration, stored as probed_at / probe_status / probe_detail and audited
// as identity_provider.probed. OIDC: {issuer}/.well-known/openid-configuration (its issuer must equal
// the configured one), then jwks_uri (its keys counted), and whether the client-secret variable is set.
// SAML: the certificate idpCertRef names, parsed (subject, issuer, validity, SHA-256 fingerprint,
// key); never the PEM, never a secret's value.
import { X509Certificate } from 'node:crypto';
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { AppError } from '../../kernel/errors.ts';
import { oidcConfigOf, readRef, samlConfigOf } from './provider-config.ts';
import { providerOrFail } from './providers.ts';
import { providerById, setProbeResult, type ProviderRow } from './store.ts';
import { fetchJson, FetchJsonError } from './fetch-json.ts';
import { urlProblem } from './providers.ts';


export interface ProbeResult { status: 'ok' | 'failed'; probedAt: string; detail: Record<string, unknown> & { problems: string[] } }

export async function probeProvider(ctx: Ctx, providerId: string): Promise<{ provider: ProviderRow; result: ProbeResult }> {
  const p = await providerOrFail(ctx, providerId);
  const detail = p.kind === 'oidc' ? await probeOidc(p) : probeSaml(p, ctx.now());
  const result: ProbeResult = { status: detail.problems.length === 0 ? 'ok' : 'failed', probedAt: ctx.now().toISOString(), detail };
  const provider = await ctx.db.tx(async () => {
    await setProbeResult(ctx.db, p.id, result.probedAt, result.status, JSON.stringify(detail));
    await record(ctx, {
      action: 'identity_provider.probed', targetType: 'identity_provider', targetId: p.id, result: result.status === 'ok' ? 'success' : 'failure',
      organizationId: p.organization_id, workspaceId: null, projectId: null,
      metadata: { kind: p.kind, status: result.status, problems: detail.problems },
    });
    return (await providerById(ctx.db, p.id))!;
  });
  return { provider, result };
}

/** The variable's state: set or not (never its value). */
function refState(name: string): { set: boolean; problem: string | null; value: string | null } {
  try {
    return { set: true, problem: null, value: readRef(name) };
  } catch (err) {
    if (err instanceof AppError) return { set: false, problem: `the environment variable ${name} is not set`, value: null };
    throw err;
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

async function probeOidc(p: ProviderRow): Promise<ProbeResult['detail']> {
  const c = oidcConfigOf(p);
  const problems: string[] = [];
  const secret = refState(c.clientSecretRef);
  if (secret.problem) problems.push(secret.problem);
  const discoveryUrl = `${c.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const detail: ProbeResult['detail'] = { discoveryUrl, clientSecretRef: c.clientSecretRef, clientSecretSet: secret.set, problems };
  let doc: Record<string, unknown>;
  try {
    doc = await fetchJson(discoveryUrl);
  } catch (err) {
    if (!(err instanceof FetchJsonError)) throw err;
    problems.push(`discovery document: ${err.message}`);
    return detail;
  }
  const issuer = str(doc.issuer);
  const jwksUri = str(doc.jwks_uri);
  const pkce = Array.isArray(doc.code_challenge_methods_supported) ? doc.code_challenge_methods_supported.includes('S256') : null;
  Object.assign(detail, {
    issuer, authorizationEndpoint: str(doc.authorization_endpoint), tokenEndpoint: str(doc.token_endpoint), jwksUri, pkceS256: pkce,
    idTokenSigningAlgorithms: Array.isArray(doc.id_token_signing_alg_values_supported) ? doc.id_token_signing_alg_values_supported.filter((a) => typeof a === 'string') : null,
  });
  if (issuer !== c.issuer) problems.push(`the discovery document's issuer ${JSON.stringify(issuer)} differs from the configured issuer`);
  if (!detail.authorizationEndpoint) problems.push('the discovery document has no authorization_endpoint');
  if (!detail.tokenEndpoint) problems.push('the discovery document has no token_endpoint');
  // The same rule sign-in applies (src/identity/sso/oidc/flow.ts): the client secret and the key set never travel in clear.
  for (const [name, url] of [['authorization_endpoint', detail.authorizationEndpoint], ['token_endpoint', detail.tokenEndpoint], ['jwks_uri', jwksUri]] as const) {
    const problem = typeof url === 'string' ? urlProblem(url, { httpsUnlessLoopback: true }) : null;
    if (problem) problems.push(`the discovery document's ${name} ${problem}`);
  }
  if (pkce === false) problems.push('the provider does not list PKCE S256 in code_challenge_methods_supported');
  if (!jwksUri) {
    problems.push('the discovery document has no jwks_uri');
    return detail;
  }
  try {
    const jwks = await fetchJson(jwksUri);
    const keys = Array.isArray(jwks.keys) ? jwks.keys.filter((k): k is Record<string, unknown> => typeof k === 'object' && k !== null) : [];
    const signing = keys.filter((k) => k.use === undefined || k.use === 'sig');
    detail.keys = keys.length;
    detail.signingKeys = signing.map((k) => ({ kid: str(k.kid), kty: str(k.kty), alg: str(k.alg) }));
    if (signing.length === 0) problems.push('the key set has no signing keys');
  } catch (err) {
    if (!(err instanceof FetchJsonError)) throw err;
    problems.push(`key set (jwks_uri): ${err.message}`);
  }
  return detail;
}

/** The first certificate of a PEM value (or base64 DER without the PEM lines). */
function certificateOf(value: string): X509Certificate {
  const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(value)?.[0];
  return new X509Certificate(pem ?? Buffer.from(value.replace(/\s+/g, ''), 'base64'));
}

function probeSaml(p: ProviderRow, now: Date): ProbeResult['detail'] {
  const c = samlConfigOf(p);
  const problems: string[] = [];
  const detail: ProbeResult['detail'] = { idpCertRef: c.idpCertRef, idpEntityId: c.idpEntityId, ssoUrl: c.ssoUrl, problems };
  const ref = refState(c.idpCertRef);
  if (ref.problem || ref.value === null) {
    problems.push(ref.problem ?? `the environment variable ${c.idpCertRef} is not set`);
    return detail;
  }
  let cert: X509Certificate;
  try {
    cert = certificateOf(ref.value);
  } catch {
    problems.push(`the environment variable ${c.idpCertRef} holds no readable X.509 certificate (PEM)`);
    return detail;
  }
  const from = new Date(cert.validFrom);
  const to = new Date(cert.validTo);
  const key = cert.publicKey;
  Object.assign(detail, {
    subject: cert.subject, issuer: cert.issuer, serialNumber: cert.serialNumber,
    validFrom: from.toISOString(), validTo: to.toISOString(), fingerprint256: cert.fingerprint256,
    keyType: key.asymmetricKeyType ?? null, keyBits: key.asymmetricKeyDetails?.modulusLength ?? null,
  });
  if (now < from) problems.push(`the certificate is not valid before ${from.toISOString()}`);
  if (now > to) problems.push(`the certificate expired at ${to.toISOString()}`);
  if (key.asymmetricKeyType !== 'rsa') problems.push('the certificate\'s key is not RSA (signatures are checked with rsa-sha256 or rsa-sha512)');
  else if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) problems.push('the certificate\'s RSA key is shorter than 2048 bits');
  return detail;
}
