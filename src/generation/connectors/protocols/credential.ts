// The credential of a connector call: read from the environment variable the connector names, only
// when the operator designated it for connectors (src/kernel/credentials.ts), never logged.
import { ConnectorError } from './types.ts';
import type { ConnectorSpec } from './types.ts';
import { credentialNameProblem, type CredentialPolicy } from '../../../kernel/credentials.ts';

/**
 * The connector's authEnv when the operator designated it for connectors (null: no credential); a
 * forbidden name is connector_credential_forbidden (not retryable). Never reads the variable.
 */
export function allowedCredentialName(connector: ConnectorSpec, policy: CredentialPolicy): string | null {
  const name = connector.authEnv;
  if (!name) return null;
  const problem = credentialNameProblem(name, policy);
  if (problem) throw new ConnectorError('connector_credential_forbidden', `authEnv ${name} ${problem}; the call was not made`, false);
  return name;
}

/**
 * The credential of a connector, read from `env[authEnv]` at call time; null when the connector has
 * no authEnv. A name the operator did not designate (src/kernel/credentials.ts, e.g. a connector
 * stored before the rule) -> connector_credential_forbidden, and nothing is read or sent; missing or
 * empty -> connector_credential_missing (neither retryable). The value is never logged, stored, or
 * put in an error message.
 */
export function credentialOf(connector: ConnectorSpec, env: Readonly<Record<string, string | undefined>>, policy: CredentialPolicy): string | null {
  const name = allowedCredentialName(connector, policy);
  if (!name) return null;
  const value = env[name];
  if (!value) throw new ConnectorError('connector_credential_missing', `environment variable ${name} is not set`, false);
  return value;
}

/** Removes every occurrence of the secret (and its Bearer form) from a text. */
export function redact(text: string, secret: string | null | undefined): string {
  if (!secret || !text) return text;
  return text.split(secret).join('[redacted]');
}
