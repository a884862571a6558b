// Which environment variables a model connector may name as its credential (authEnv). A connector is
// configured by an organization's administrator, and its credential is sent as `Authorization:
// Bearer` to the endpoint that administrator chose, so the name must be one the OPERATOR designated
// for connectors: a name starting with SVC_CONNECTOR_SECRET_PREFIX (default SVC_CONNECTOR_SECRET_)
// or listed in SVC_CONNECTOR_SECRET_NAMES. The service's own settings (every SVC_* of src/kernel/config.ts,
// whatever the prefix) and PLATFORM_* are never allowed. One rule, used at registration and update
// (422 naming authEnv), at every call (credentialOf: a connector stored before the rule existed does
// not send a forbidden variable) and for presence reports (authConfigured).
import { ConfigError, SETTING_NAMES, type Config } from './config.ts';

export interface CredentialPolicy {
  readonly prefix: string;
  readonly names: ReadonlySet<string>;
}

const NAME = /^[A-Z_][A-Z0-9_]*$/;
const PREFIX = /^[A-Z][A-Z0-9_]{2,}_$/;
/** Variable families the service reads for itself besides SETTINGS. */
const RESERVED_PREFIXES = ['PLATFORM_'] as const;

/** Whether a variable belongs to the service itself (one of its settings or a reserved family). */
export const isServiceVariable = (name: string): boolean =>
  SETTING_NAMES.has(name) || RESERVED_PREFIXES.some((p) => name.startsWith(p));

const policies = new WeakMap<object, CredentialPolicy>();

/**
 * The designation of a configuration (parsed once per Config object). A malformed prefix or list, or
 * a listed name that is one of the service's own variables, is a ConfigError (the server does not start).
 */
export function credentialPolicy(config: Pick<Config, 'connectorSecretPrefix' | 'connectorSecretNames'>): CredentialPolicy {
  let p = policies.get(config);
  if (p) return p;
  const prefix = config.connectorSecretPrefix.trim();
  if (!PREFIX.test(prefix)) {
    throw new ConfigError(`SVC_CONNECTOR_SECRET_PREFIX must be upper-case letters, digits and underscores, at least 4 characters, ending with "_", got "${prefix.slice(0, 60)}"`);
  }
  const names = config.connectorSecretNames.split(/[\s,]+/).filter(Boolean);
  for (const n of names) {
    if (!NAME.test(n)) throw new ConfigError(`SVC_CONNECTOR_SECRET_NAMES holds "${n.slice(0, 60)}", which is no environment variable name`);
    if (isServiceVariable(n)) throw new ConfigError(`SVC_CONNECTOR_SECRET_NAMES must not name the service's own variable ${n}`);
  }
  p = Object.freeze({ prefix, names: new Set(names) });
  policies.set(config, p);
  return p;
}

/** What forbids `name` as a connector credential (null: allowed). Never reads the variable. */
export function credentialNameProblem(name: string, policy: CredentialPolicy): string | null {
  if (isServiceVariable(name)) return 'names one of the service\'s own settings, which is never a connector credential';
  if (policy.names.has(name) || (name.startsWith(policy.prefix) && name.length > policy.prefix.length)) return null;
  return `must be a variable the operator designated for connector credentials: a name starting with ${policy.prefix}`
    + `${policy.names.size ? ` or one of ${[...policy.names].join(', ')}` : ''} (SVC_CONNECTOR_SECRET_PREFIX, SVC_CONNECTOR_SECRET_NAMES)`;
}

/** Whether the named variable is allowed and set (non-empty) in `env`; never its value. */
export const credentialPresent = (name: string | null, policy: CredentialPolicy, env: Readonly<Record<string, string | undefined>> = process.env): boolean =>
  !!name && credentialNameProblem(name, policy) === null && typeof env[name] === 'string' && env[name] !== '';
