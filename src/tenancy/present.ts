// What GET /api/organizations/:organizationId answers: the organization, the caller's role in it
// and its seat use.
import * as o from '../kernel/view.ts';
import { ORG_ROLES } from '../directory/roles.ts';
import { OrganizationView } from '../directory/present/tenancy.ts';

export const SeatUsageView = o.named('SeatUsage', o.object({
  limit: o.int('seats of the billing account'), activeMembers: o.int(), pendingInvitations: o.int('unexpired pending invitations (each holds a seat)'),
  used: o.int('activeMembers + pendingInvitations'),
}));

/** GET /api/organizations/{organizationId}. */
export const OrganizationDetailView = o.named('OrganizationDetail', o.extend(OrganizationView, {
  role: o.nullable(o.oneOf(ORG_ROLES, 'the caller\'s organization role')),
  seats: SeatUsageView,
}));
