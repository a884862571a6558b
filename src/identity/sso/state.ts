// One-time flow states of single sign-on (an OIDC authorization request, a SAML AuthnRequest): found
// by the SHA-256 of the handle (the OIDC state, the SAML request id) and never by the handle itself;
// the payload (nonce, PKCE verifier, return path, relay state) is AES-256-GCM ciphertext under
// SVC_OIDC_STORAGE_KEY with the handle hash, the kind and the provider id as additional data (a payload
// moved to another row, or a row whose provider or kind is changed, does not decrypt). Taken once: one
// atomic DELETE ... RETURNING removes it while reading it; expired states are deleted on every save.
import type { Ctx } from '../../directory/context.ts';
import { sha256Hex } from '../../kernel/ids.ts';
import { SecretUnreadableError, seal, ssoStorageKey, unseal } from '../../kernel/seal.ts';
import { insertFlowState, purgeExpiredStates, purgeExpiredTickets, takeFlowStateRow } from './store.ts';

/** How long a started sign-in may take at the provider. */
export const FLOW_TTL_MS = 10 * 60_000;
/** Expired tickets are deleted this long after expiry (kept a while for investigation); flow states at once. */
const KEEP_EXPIRED_TICKETS_MS = 24 * 3_600_000;

const aad = (handleHash: string, kind: 'oidc' | 'saml', providerId: string) =>
  Buffer.from(`svc:sso:state:${handleHash}:${kind}:${providerId}`, 'utf8');

export interface NewFlowState {
  providerId: string;
  kind: 'oidc' | 'saml';
  handle: string;
  payload: Record<string, unknown>;
  ttlMs: number;
}

export async function saveFlowState(ctx: Ctx, s: NewFlowState): Promise<void> {
  if (!s.handle) throw new Error('a flow state needs a handle');
  const now = ctx.now();
  const handleHash = sha256Hex(s.handle);
  const payload = seal(ssoStorageKey(ctx.config), aad(handleHash, s.kind, s.providerId), JSON.stringify(s.payload)).toString('base64');
  await ctx.db.tx(async () => {
    await purgeExpiredStates(ctx.db, now.toISOString());
    await purgeExpiredTickets(ctx.db, new Date(now.getTime() - KEEP_EXPIRED_TICKETS_MS).toISOString());
    await insertFlowState(ctx.db, {
      handle_hash: handleHash, provider_id: s.providerId, kind: s.kind, payload,
      created_at: now.toISOString(), expires_at: new Date(now.getTime() + s.ttlMs).toISOString(),
    });
  });
}

/**
 * The state's provider and payload, taken once (the row is deleted); null when the handle is unknown,
 * of another kind, expired (deleted as well) or its payload does not decrypt under this handle, kind
 * and provider.
 */
export async function takeFlowState(ctx: Ctx, kind: 'oidc' | 'saml', handle: string): Promise<{ providerId: string; payload: Record<string, unknown> } | null> {
  if (typeof handle !== 'string' || handle === '') return null;
  const handleHash = sha256Hex(handle);
  const row = await ctx.db.tx(() => takeFlowStateRow(ctx.db, handleHash, kind, ctx.now().toISOString()));
  if (!row) return null;
  try {
    const payload = JSON.parse(unseal(ssoStorageKey(ctx.config), aad(handleHash, row.kind, row.provider_id), Buffer.from(row.payload, 'base64'))) as unknown;
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
    return { providerId: row.provider_id, payload: payload as Record<string, unknown> };
  } catch (err) {
    if (err instanceof SecretUnreadableError || err instanceof SyntaxError) return null;
    throw err;
  }
}
