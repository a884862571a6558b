// Sessions as the API shows them: never the token or its hash.
import type { SessionLifetimes } from '../identity/policy/store.ts';
import type { SessionRow } from './store.ts';

/** expiresAt: when the session ends if unused from now on (idle), absoluteExpiresAt: whatever its use. */
export function presentSession(s: SessionRow, lifetimes: SessionLifetimes, currentId: string | null) {
  const idle = new Date(Date.parse(s.last_seen_at) + lifetimes.idleMinutes * 60_000).toISOString();
  const policyEnd = new Date(Date.parse(s.created_at) + lifetimes.absoluteHours * 3_600_000).toISOString();
  const absolute = policyEnd < s.expires_at ? policyEnd : s.expires_at;
  return {
    id: s.id,
    kind: s.kind,
    current: s.id === currentId,
    createdAt: s.created_at,
    lastSeenAt: s.last_seen_at,
    expiresAt: absolute < idle ? absolute : idle,
    absoluteExpiresAt: absolute,
    ip: s.ip,
    userAgent: s.user_agent,
  };
}
