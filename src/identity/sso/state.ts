// One-time flow states of single sign-on (an OIDC authorization request, a SAML AuthnRequest): found
// by the SHA-256 of the handle (the OIDC state, the SAML request id) and never by the handle itself;
// the payload (nonce, PKCE verifier, return path, relay state) is AES-256-GCM ciphertext under
// SVC_OIDC_STORAGE_KEY with the handle hash as additional data (a payload moved to another row does
// not decrypt). Taken once: one atomic UPDATE marks it used while reading it.
import type { Ctx } from '../../context.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { SecretUnreadableError, seal, ssoStorageKey, unseal } from '../mfa/crypto.ts';
import { insertFlowState, purgeExpired, takeFlowStateRow } from './store.ts';

/** How long a started sign-in may take at the provider. */
export const FLOW_TTL_MS = 10 * 60_000;
/** Expired states and tickets are deleted this long after expiry (kept a while for investigation). */
const KEEP_EXPIRED_MS = 24 * 3_600_000;

const aad = (handleHash: string) => Buffer.from(`svc:sso:state:${handleHash}`, 'utf8');

export interface NewFlowState {
  providerId: string;
  kind: 'oidc' | 'saml';
  handle: string;
  payload: Record<string, unknown>;
  ttlMs: number;
}

export function saveFlowState(ctx: Ctx, s: NewFlowState): void {
  if (!s.handle) throw new Error('a flow state needs a handle');
  const now = ctx.now();
  const handleHash = sha256Hex(s.handle);
  const payload = seal(ssoStorageKey(ctx.config), aad(handleHash), JSON.stringify(s.payload)).toString('base64');
  ctx.db.tx(() => {
    purgeExpired(ctx.db, new Date(now.getTime() - KEEP_EXPIRED_MS).toISOString());
    insertFlowState(ctx.db, {
      handle_hash: handleHash, provider_id: s.providerId, kind: s.kind, payload,
      created_at: now.toISOString(), expires_at: new Date(now.getTime() + s.ttlMs).toISOString(), used_at: null,
    });
  });
}

/**
 * The state's provider and payload, taken once (atomically marked used); null when the handle is
 * unknown, of another kind, used, expired or its payload does not decrypt.
 */
export function takeFlowState(ctx: Ctx, kind: 'oidc' | 'saml', handle: string): { providerId: string; payload: Record<string, unknown> } | null {
  if (typeof handle !== 'string' || handle === '') return null;
  const handleHash = sha256Hex(handle);
  const row = ctx.db.tx(() => takeFlowStateRow(ctx.db, handleHash, kind, ctx.now().toISOString()));
  if (!row) return null;
  try {
    const payload = JSON.parse(unseal(ssoStorageKey(ctx.config), aad(handleHash), Buffer.from(row.payload, 'base64'))) as unknown;
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
    return { providerId: row.provider_id, payload: payload as Record<string, unknown> };
  } catch (err) {
    if (err instanceof SecretUnreadableError || err instanceof SyntaxError) return null;
    throw err;
  }
}
