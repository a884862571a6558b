// Seats: active members (an active organization membership of an active account) plus pending,
// unexpired invitations may not exceed the billing account's seat limit.
import type { Db } from '../../db/db.ts';
import { conflict } from '../../kernel/errors.ts';
import { billingAccountOf } from './account.ts';
import { LOCKS } from '../locks.ts';

export interface SeatUsage { limit: number; activeMembers: number; pendingInvitations: number; used: number }

export async function seatUsage(db: Db, organizationId: string, now: string): Promise<SeatUsage> {
  const limit = (await billingAccountOf(db, organizationId))?.seat_limit ?? 0;
  const { members, pending } = (await db.get<{ members: number; pending: number }>(
    `SELECT (SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id
              WHERE m.organization_id = ?1 AND m.level = 'organization' AND m.status = 'active' AND u.status = 'active') AS members,
            (SELECT count(*) FROM invitations WHERE organization_id = ?1 AND status = 'pending' AND expires_at > ?2) AS pending`,
    organizationId, now))!;
  return { limit, activeMembers: members, pendingInvitations: pending, used: members + pending };
}

/**
 * Throws 409 seat_limit_reached when `extra` more seats would exceed the limit. Inside the transaction
 * that then takes the seat: the organization's seats key comes first (src/directory/locks.ts), so no
 * other transaction of the organization takes a seat between this count and this one's end. A caller
 * that reads what its decision depends on before, or writes an audit record before, takes the key
 * itself first (taking it again here is free).
 */
export async function assertSeatsAvailable(db: Db, organizationId: string, now: string, extra = 1): Promise<void> {
  await db.lock(LOCKS.seats(organizationId));
  const u = await seatUsage(db, organizationId, now);
  if (u.used + extra > u.limit) {
    throw conflict('seat_limit_reached', `the organization uses ${u.used} of ${u.limit} seats (members plus pending invitations)`, { ...u });
  }
}
