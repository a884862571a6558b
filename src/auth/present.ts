// Sessions as the API shows them: never the token or its hash.
import type { Config } from '../config.ts';
import type { SessionRow } from './store.ts';

export function presentSession(s: SessionRow, config: Config, currentId: string | null) {
  const idle = new Date(Date.parse(s.last_seen_at) + config.sessionIdleMinutes * 60_000).toISOString();
  return {
    id: s.id,
    kind: s.kind,
    current: s.id === currentId,
    createdAt: s.created_at,
    lastSeenAt: s.last_seen_at,
    expiresAt: s.expires_at < idle ? s.expires_at : idle,
    absoluteExpiresAt: s.expires_at,
    ip: s.ip,
    userAgent: s.user_agent,
  };
}
