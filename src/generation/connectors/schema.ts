// Input of the model platform routes. Field rules that need no other field live here (endpoint URL,
// authEnv name, distinct capability, route paths); rules across fields (routes and models named by
// the capability, comfyui's workflow) are checked by the service on the merged record.
import * as v from '../../kernel/validate.ts';
import { CONNECTOR_KINDS, CONNECTOR_STATUSES, COST_MODES, WORK_KINDS } from './protocols/types.ts';

type State = Parameters<v.Schema<unknown>['check']>[2];

function custom<T>(json: v.JsonSchema, check: (value: unknown, path: string, fail: (reason: string) => void) => T): v.Schema<T> & { optional: false } {
  return {
    json, optional: false,
    check: (value: unknown, path: string, st: State) => check(value, path, (reason) => { st.errors[path || 'body'] ??= reason; }),
  };
}

/** Query parameter names that carry credentials; those belong in authEnv. */
const SECRET_PARAM = /key|token|secret|passw|signature|sig$|auth|credential/i;

/** http or https, without user:pass@ and without credential-like query parameters. */
export const endpointUrl = custom<string>(
  { type: 'string', maxLength: 2000, format: 'uri', description: 'http or https URL of the model service; no credentials in it (use authEnv); a link-local, metadata or reserved address (literal in any spelling, or resolved) is refused by the egress policy' },
  (value, _path, fail) => {
    if (typeof value !== 'string' || value.trim() === '') { fail('must be an http or https URL'); return ''; }
    const s = value.trim();
    if (s.length > 2000) { fail('must be at most 2000 characters'); return ''; }
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      fail('must be an http or https URL'); return '';
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') { fail('must be an http or https URL'); return ''; }
    if (u.username || u.password) { fail('must not hold credentials (user:password@); name an environment variable in authEnv instead'); return ''; }
    if ([...u.searchParams.keys()].some((k) => SECRET_PARAM.test(k))) { fail('must not hold credentials in its query string; name an environment variable in authEnv instead'); return ''; }
    if (u.hash) { fail('must not have a fragment'); return ''; }
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}${u.search}`;
  },
);

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** Heuristics for a pasted credential value: known key prefixes, JWTs, long random-looking strings. */
export function looksLikeSecret(s: string): boolean {
  if (/^(sk|pk|rk)[-_]/.test(s) || /^(ghp_|gho_|ghs_|ghu_|github_pat_|xox[abprs]-|AIza|eyJ|hf_|glpat-)/.test(s)) return true;
  if (/^(AKIA|ASIA)[A-Z0-9]{16}$/.test(s)) return true;
  if (/^(bearer|basic)\s/i.test(s) || /\s/.test(s)) return true;
  if (s.length >= 16 && /[^A-Za-z0-9_]/.test(s) && /[0-9]/.test(s)) return true;
  if (s.length >= 20 && !s.includes('_') && /[0-9]/.test(s) && /[A-Za-z]/.test(s)) return true;
  if (s.length >= 12 && /[a-z]/.test(s) && /[A-Z]/.test(s) && /[0-9]/.test(s)) return true;
  return false;
}

/**
 * The NAME of an environment variable; a value that looks like a credential is refused without being
 * echoed. Whether the operator designated the name is the service's check (src/kernel/credentials.ts).
 */
export const authEnvName = custom<string>(
  { type: 'string', maxLength: 128, pattern: ENV_NAME.source, description: 'NAME of the environment variable holding the credential, never the credential; only a variable the operator designated for connector credentials: a name starting with SVC_CONNECTOR_SECRET_PREFIX (default SVC_CONNECTOR_SECRET_, e.g. SVC_CONNECTOR_SECRET_OPENAI) or listed in SVC_CONNECTOR_SECRET_NAMES, never one of the service\'s own settings (422 otherwise; a stored name no longer designated fails each call with connector_credential_forbidden)' },
  (value, _path, fail) => {
    if (typeof value !== 'string' || value.trim() === '') { fail('must be the name of an environment variable, e.g. SVC_CONNECTOR_SECRET_OPENAI'); return ''; }
    const s = value.trim();
    if (looksLikeSecret(s)) { fail('looks like a credential value; give the NAME of the environment variable that holds it (e.g. SVC_CONNECTOR_SECRET_OPENAI), never the value'); return ''; }
    if (s.length > 128 || !ENV_NAME.test(s)) { fail('must be an environment variable name: upper-case letters, digits and underscores, not starting with a digit (e.g. SVC_CONNECTOR_SECRET_OPENAI)'); return ''; }
    return s;
  },
);

/** A non-empty array of distinct kinds of work. */
export const capabilityList = custom<string[]>(
  { type: 'array', items: { type: 'string', enum: [...WORK_KINDS] }, minItems: 1, maxItems: WORK_KINDS.length, uniqueItems: true, description: 'kinds of work this connector serves' },
  (value, _path, fail) => {
    if (!Array.isArray(value) || value.length === 0) { fail(`must be a non-empty array of ${WORK_KINDS.join(', ')}`); return []; }
    const bad: unknown = value.find((x) => typeof x !== 'string' || !(WORK_KINDS as readonly string[]).includes(x));
    if (bad !== undefined) { fail(`holds ${typeof bad === 'string' ? `"${bad.slice(0, 40)}"` : 'a non-string'}; each item must be one of ${WORK_KINDS.join(', ')}`); return []; }
    if (new Set(value).size !== value.length) { fail('must not repeat a kind of work'); return []; }
    return value as string[];
  },
);

const routePath = v.string({ min: 1, max: 500, pattern: /^\/\S*$/, description: 'path starting with /' });

/** An object whose values all match `item` (keys checked by the service against the capability). */
function mapOf(item: v.Schema<string>, description: string): v.Schema<Record<string, string>> & { optional: false } {
  return {
    json: { type: 'object', additionalProperties: item.json, maxProperties: 50, description }, optional: false,
    check(value: unknown, path: string, st: State) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) { st.errors[path] ??= 'must be an object'; return {}; }
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length > 50) { st.errors[path] ??= 'must have at most 50 entries'; return {}; }
      return Object.fromEntries(entries.map(([k, x]) => [k, item.check(x, `${path}.${k}`, st)]));
    },
  };
}

/** Free-form like job parameters: the validator's one depth and size limit for free-form JSON applies. */
const plainObject = v.anyObject({ maxKeys: 1000, description: 'comfyui: API-format workflow with placeholders such as "{{prompt}}" and "{{seed}}"' });

export const ProtocolBody = v.object({
  healthRoute: v.optional(routePath),
  routes: v.optional(mapOf(routePath, 'route per kind of work; keys must be in capability, values start with /')),
  models: v.optional(mapOf(v.string({ min: 1, max: 200 }), 'model name per kind of work; keys must be in capability')),
  workflow: v.optional(plainObject),
});

const fields = {
  endpoint: endpointUrl,
  kind: v.oneOf(CONNECTOR_KINDS),
  capability: capabilityList,
  costMode: v.oneOf(COST_MODES, { description: 'local (the endpoint must resolve to loopback or private addresses only, checked at registration and on every call); mixed and cloud need an administrator\'s approval and are refused under local_runner_only' }),
};

export const ConnectorRegisterBody = v.object({
  label: v.string({ min: 1, max: 200 }),
  ...fields,
  authEnv: v.optional(v.nullable(authEnvName)),
  protocol: v.optional(ProtocolBody),
});

export const ConnectorPatchBody = v.object({
  label: v.optional(v.string({ min: 1, max: 200 })),
  endpoint: v.optional(fields.endpoint),
  kind: v.optional(fields.kind),
  capability: v.optional(fields.capability),
  costMode: v.optional(fields.costMode),
  authEnv: v.optional(v.nullable(authEnvName)),
  protocol: v.optional(ProtocolBody),
});

export const ApproveBody = v.object({ note: v.optional(v.string({ max: 1000 })) });

export const ConnectorListQuery = v.object({
  status: v.optional(v.oneOf(CONNECTOR_STATUSES)),
  kind: v.optional(v.oneOf(CONNECTOR_KINDS)),
  costMode: v.optional(v.oneOf(COST_MODES)),
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'items per page, default 50, clamped to 1..200' })),
}, { allowUnknown: true });

export type RegisterInput = v.Infer<typeof ConnectorRegisterBody>;
export type PatchInput = v.Infer<typeof ConnectorPatchBody>;
export type ProtocolInput = v.Infer<typeof ProtocolBody>;
