// Deliveries, their items and their links as the API shows them. Links never show the token or its hash.
import type { Db } from '../../db/db.ts';
import * as o from '../../kernel/view.ts';
import type { GapKind, ItemState } from './gather.ts';
import { itemStates } from './gather.ts';
import { deliveryItems, type DeliveryLinkRow, type DeliveryRow } from './store.ts';
import { DELIVERY_STATUSES } from './schema.ts';
import { REVIEW_STATUSES, type ReviewStatus } from '../review/store.ts';

const GAP_KINDS = ['qa_missing', 'qa_failed', 'review_missing', 'review_not_approved', 'artifact_changed'] as const satisfies readonly GapKind[];
const ARTIFACT_KINDS = ['image', 'video', 'audio', 'other'] as const;

export const DeliveryView = o.named('Delivery', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(),
  title: o.text(), note: o.nullable(o.text()), status: o.oneOf(DELIVERY_STATUSES), version: o.int('1, and + 1 for each new set of items'),
  itemCount: o.int(), createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
  approvedBy: o.nullable(o.text()), approvedAt: o.nullable(o.time()),
}));

export const DeliveryGapView = o.named('DeliveryGap', o.object({
  artifactId: o.text(), position: o.int(), gap: o.oneOf(GAP_KINDS),
  checks: o.optional(o.array(o.text(), 'qa_failed: the failing blocking checks')),
  reviewId: o.optional(o.text()), reviewStatus: o.optional(o.oneOf(REVIEW_STATUSES)),
  reason: o.optional(o.text()),
}, 'what an item lacks for approval'));

export const DeliveryItemView = o.named('DeliveryItem', o.object({
  position: o.int(), artifactId: o.text(), sha256: o.text({ description: 'the SHA-256 the item was gathered (and is approved) with' }),
  episodeId: o.nullable(o.text()), shotId: o.nullable(o.text()),
  kind: o.nullable(o.oneOf(ARTIFACT_KINDS)), source: o.nullable(o.oneOf(['generation', 'composition'] as const)),
  fileName: o.nullable(o.text()), fileSize: o.nullable(o.int()), durationMs: o.nullable(o.int()),
  approvedOn: o.nullable(o.object({ qaRunId: o.nullable(o.text()), reviewId: o.nullable(o.text()) }, 'recorded at approval: the QA run and review the item was approved on')),
  qa: o.nullable(o.object({ runId: o.text(), result: o.oneOf(['pass', 'warn', 'fail'] as const), failing: o.array(o.text()), checkedAt: o.time() }, 'the QA verdict on the item\'s SHA-256')),
  review: o.nullable(o.object({
    reviewId: o.text(), status: o.oneOf(REVIEW_STATUSES), approved: o.bool(), decidedBy: o.nullable(o.text()), decidedAt: o.nullable(o.time()),
  }, 'the review verdict on the item\'s SHA-256')),
  gaps: o.array(o.oneOf(GAP_KINDS)),
}));

export const DeliveryDetailView = o.named('DeliveryDetail', o.extend(DeliveryView, {
  items: o.array(DeliveryItemView), gaps: o.array(DeliveryGapView, 'every item\'s gaps to approval'), ready: o.bool('a draft without gaps'),
}));

export const presentDelivery = (d: DeliveryRow, itemCount: number): o.Out<typeof DeliveryView> => ({
  id: d.id, organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
  title: d.title, note: d.note, status: d.status, version: d.version, itemCount,
  createdBy: d.created_by, createdAt: d.created_at, updatedAt: d.updated_at, approvedBy: d.approved_by, approvedAt: d.approved_at,
});

const presentItem = ({ item, artifact, qa, review, gaps }: ItemState): o.Out<typeof DeliveryItemView> => ({
  position: item.position,
  artifactId: item.artifact_id,
  sha256: item.artifact_sha256,
  episodeId: item.episode_id,
  shotId: item.shot_id,
  kind: artifact?.kind ?? null,
  source: artifact?.source ?? null,
  fileName: artifact?.file_name ?? null,
  fileSize: artifact?.file_size ?? null,
  durationMs: artifact?.duration_ms ?? null,
  /** Recorded at approval: the QA run and review the item was approved on. */
  approvedOn: item.qa_run_id || item.review_id ? { qaRunId: item.qa_run_id, reviewId: item.review_id } : null,
  qa: qa ? { runId: qa.runId, result: qa.result, failing: qa.failing, checkedAt: qa.checkedAt } : null,
  review: review ? { reviewId: review.reviewId, status: review.status as ReviewStatus, approved: review.approved, decidedBy: review.decidedBy, decidedAt: review.decidedAt } : null,
  gaps: gaps.map((g) => g.gap),
});

/** The delivery with its items, each with its QA and review verdict on the item's hash, and the gaps to approval. */
export async function presentDeliveryDetail(db: Db, d: DeliveryRow): Promise<o.Out<typeof DeliveryDetailView>> {
  const states = await itemStates(db, d.project_id, await deliveryItems(db, d.id));
  const gaps = states.flatMap((s) => s.gaps).map((g) => ({ ...g, reviewStatus: g.reviewStatus as ReviewStatus | undefined }));
  return { ...presentDelivery(d, states.length), items: states.map(presentItem), gaps, ready: d.status === 'draft' && gaps.length === 0 };
}

export function linkStatus(l: DeliveryLinkRow, now: Date): 'active' | 'revoked' | 'expired' {
  if (l.revoked_at) return 'revoked';
  return Date.parse(l.expires_at) <= now.getTime() ? 'expired' : 'active';
}

export const LinkView = o.named('DeliveryLink', o.object({
  id: o.text(), deliveryId: o.text(), label: o.nullable(o.text()), status: o.oneOf(['active', 'revoked', 'expired']),
  expiresAt: o.time(), revokedAt: o.nullable(o.time()), revokedBy: o.nullable(o.text()), createdBy: o.nullable(o.text()), createdAt: o.time(),
  lastUsedAt: o.nullable(o.time()), downloadCount: o.int('downloads counted: whole files or ranges from byte 0'),
  includeExport: o.bool('the link also opens the delivery\'s export package'),
}));

/** A new link: the link, its token and URL (shown only in this answer). */
export const NewLinkView = o.extend(LinkView, {
  token: o.text({ description: 'the link\'s token (dlk_...): answered only here, stored as its SHA-256' }),
  url: o.text({ description: 'the link to hand to the client: a browser opens the landing page, an API client gets the JSON manifest' }),
});

export const presentLink = (l: DeliveryLinkRow, now: Date): o.Out<typeof LinkView> => ({
  id: l.id, deliveryId: l.delivery_id, label: l.label, status: linkStatus(l, now), expiresAt: l.expires_at,
  revokedAt: l.revoked_at, revokedBy: l.revoked_by, createdBy: l.created_by, createdAt: l.created_at,
  lastUsedAt: l.last_used_at, downloadCount: l.download_count, includeExport: l.allow_export === 1,
});

const href = (what: string) => o.text({ description: `${what} with the link's token in the query: opens without any header (a browser, a player, curl)` });

/** What a client delivery link opens, as JSON (GET /api/client/delivery). */
export const ClientManifestView = o.named('ClientDeliveryManifest', o.object({
  title: o.text(), version: o.int(), project: o.text({ description: 'the project\'s name' }),
  approvedAt: o.nullable(o.time()), expiresAt: o.time('when the link stops working'),
  files: o.array(o.object({
    position: o.int(), name: o.text({ description: 'the name the file is offered under' }),
    kind: o.nullable(o.oneOf(['image', 'video', 'audio', 'other'])), mimeType: o.nullable(o.text()), size: o.nullable(o.int()),
    sha256: o.text({ description: 'the approved SHA-256: the file is served only while its bytes hash to it' }), durationMs: o.nullable(o.int()),
    downloadPath: o.text({ description: 'the file\'s path, for use with the x-delivery-token header' }), href: href('the file\'s path'),
  })),
  export: o.nullable(o.object({
    id: o.text(), createdAt: o.time(),
    archive: o.nullable(o.object({ name: o.text(), size: o.nullable(o.int()), sha256: o.nullable(o.text()), href: href('the archive\'s path') })),
    files: o.array(o.object({
      path: o.text({ description: 'the path in the package' }), role: o.text({ description: 'manifest, media, frame, shotlist, timeline, edl or subtitles' }),
      size: o.nullable(o.int()), sha256: o.text(), href: href('the file\'s path'),
    })),
  }, 'the export package of the delivery\'s version, when the link was made with includeExport and the package was written; else null')),
}));
