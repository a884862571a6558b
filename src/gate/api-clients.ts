// A Bearer token that is no session may be an API client's access token (looked up by its keyed hash,
// src/directory/sessions/token-hash.ts).
// Expired tokens and revoked clients are no credential (401); last use is written at most once a minute.
import type { Db } from '../db/db.ts';
import type { Actor } from '../directory/context.ts';
import { unauthenticated } from '../kernel/errors.ts';
import { apiClientActor } from '../directory/api-clients/actor.ts';
import { apiClientByTokenHash, touchApiClient } from '../directory/api-clients/store.ts';

/** last_used_at is written at most this often per client (like sessions' last_seen_at). */
const TOUCH_INTERVAL_MS = 60_000;

/** The client's actor for a token hash, undefined when it is no client token, or 401 when expired or revoked. */
export async function apiClientActorByToken(db: Db, tokenHash: string, now: Date): Promise<Actor | undefined> {
  const row = await apiClientByTokenHash(db, tokenHash);
  if (!row) return undefined;
  if (row.status !== 'active' || row.token_expires_at <= now.toISOString()) {
    throw unauthenticated('the access token is invalid, expired or revoked; obtain a new one from POST /api/oauth/token');
  }
  if (!row.last_used_at || now.getTime() - Date.parse(row.last_used_at) >= TOUCH_INTERVAL_MS) {
    await touchApiClient(db, row.id, now.toISOString());
  }
  return apiClientActor(row);
}
