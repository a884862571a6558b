// The keys of db.lock() (src/db/db.ts) and the one order in which a transaction takes them. A key
// serializes the transactions that check a rule and then write what the rule is about: a limit (seats,
// storage, clips), an invariant several rows make (an organization keeps an active owner, the service
// an active system administrator) or the next number of a sequence (asset versions, revisions,
// catalog positions). SQLite's writers take turns anyway (BEGIN IMMEDIATE: the lock is nothing
// there); on PostgreSQL, at READ COMMITTED, the key is an advisory lock held until the transaction
// ends, and every statement after it sees what the previous holder committed. So a transaction takes
// the key BEFORE it reads what its check depends on, and keeps to this order when it takes several
// (two transactions taking two keys in opposite orders would wait for each other, and PostgreSQL would
// abort one of them):
//   1. system-admins                 the last active system administrator (identity/users/governance.ts)
//   2. seats:<organization id>       members plus pending invitations under the seat limit (directory/plan/seats.ts);
//                                    several in ascending id order
//   3. owners                        the last active owner of any organization (tenancy/service.ts, governance.ts):
//                                    one key for all organizations, since suspending an account touches every one it owns
//   4. storage:<organization id>     the organization's and its workspaces' storage quotas (production/assets/service.ts)
//   5. clips:<organization id>       the monthly clip quotas (generation/jobs/service.ts)
//   6. one object's key, at most one a transaction: asset:<asset id> (version numbers), document:<episode
//      or project id> (script and bible revisions), catalog:<project id> (numbers and positions),
//      review:<artifact id> (one review in play an artifact)
// Every key is taken before the transaction's first audit record: an append to the audit chain waits
// for the chain's head, which the append before holds until its transaction ends, so a transaction
// that asked for a key after its own append would keep every other audited transaction waiting, and
// one holding that key and appending would wait for it in turn.
// Row locks come after the keys and before the first audit record, for the same reasons. A change
// computed from a row it read (the values written back whole, a status a transition starts from, a
// counter, JSON merged in TypeScript) reads the row FOR UPDATE ({ forUpdate: true } on the getters,
// RowRead in src/db/dialect.ts): at READ COMMITTED a second change of the row waits for the first to
// end and starts from what it committed, instead of writing back what it read before and undoing the
// first. A job's dependency is read FOR SHARE. Two kinds of transaction lock a row out of this order:
// - a change whose row tells which key it needs locks the row first, then takes the key: a SCIM user
//   (its active flag: the seats to reactivate, the owners to deactivate; identity/scim/service.ts)
//   and an invitation being accepted (its organization, whose owners key a role change takes). No
//   transaction holding such a key waits for such a row, so none waits for the other in turn;
// - a change nested in its caller's transaction after the caller's append (the shot a job, a QA run or
//   a review decision moves; the reviews a new artifact re-opens, one after another; the invitation a
//   new account accepts) locks its row where it always did: at its write, which the locking read
//   only comes just before.
// PostgreSQL aborts one of two transactions that wait for each other anyway, and tx() runs it again.

export const LOCKS = {
  systemAdmins: 'system-admins',
  seats: (organizationId: string) => `seats:${organizationId}`,
  owners: 'owners',
  storage: (organizationId: string) => `storage:${organizationId}`,
  clips: (organizationId: string) => `clips:${organizationId}`,
  asset: (assetId: string) => `asset:${assetId}`,
  document: (documentId: string) => `document:${documentId}`,
  catalog: (projectId: string) => `catalog:${projectId}`,
  review: (artifactId: string) => `review:${artifactId}`,
} as const;
