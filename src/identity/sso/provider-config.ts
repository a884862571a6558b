// The kind-specific configuration of an identity provider (the JSON in identity_providers.config),
// typed, and the secrets its *Ref fields name: environment variables, read when needed, never stored.
import { AppError } from '../../kernel/errors.ts';
import type { ProviderRow } from './store.ts';

export interface OidcConfig {
  issuer: string;
  clientId: string;
  /** Name of the environment variable holding the client secret. */
  clientSecretRef: string;
  scopes: string[];
  /** Claim names: email and name of the ID token (or userinfo); subject defaults to `sub`. */
  claimMapping: { email: string; name: string; subject?: string };
}

export interface SamlConfig {
  idpEntityId: string;
  ssoUrl: string;
  /** Name of the environment variable holding the IdP's signing certificate (PEM). */
  idpCertRef: string;
  spEntityId: string;
  attributeMapping: { email: string; name: string };
}

/** Environment variable names a *Ref may hold. */
export const REF_NAME = /^[A-Z_][A-Z0-9_]*$/;

function configOf(p: ProviderRow, kind: ProviderRow['kind']): Record<string, unknown> {
  if (p.kind !== kind) throw new Error(`provider ${p.id} is ${p.kind}, not ${kind}`);
  return JSON.parse(p.config) as Record<string, unknown>;
}

export function oidcConfigOf(p: ProviderRow): OidcConfig {
  const c = configOf(p, 'oidc') as unknown as OidcConfig;
  return {
    issuer: c.issuer, clientId: c.clientId, clientSecretRef: c.clientSecretRef, scopes: [...c.scopes],
    claimMapping: { email: c.claimMapping.email, name: c.claimMapping.name, ...(c.claimMapping.subject ? { subject: c.claimMapping.subject } : {}) },
  };
}

export function samlConfigOf(p: ProviderRow): SamlConfig {
  const c = configOf(p, 'saml') as unknown as SamlConfig;
  return {
    idpEntityId: c.idpEntityId, ssoUrl: c.ssoUrl, idpCertRef: c.idpCertRef, spEntityId: c.spEntityId,
    attributeMapping: { email: c.attributeMapping.email, name: c.attributeMapping.name },
  };
}

/**
 * The value of the environment variable a *Ref names. Unset or empty: 409 sso_not_configured naming
 * the variable (never a value).
 */
export function readRef(name: string): string {
  if (!REF_NAME.test(name)) throw new AppError(409, 'sso_not_configured', 'the provider names an invalid environment variable', { variable: name });
  const value = process.env[name];
  if (value === undefined || value.trim() === '') {
    throw new AppError(409, 'sso_not_configured', `the environment variable ${name} that the provider names is not set`, { variable: name });
  }
  return value;
}
