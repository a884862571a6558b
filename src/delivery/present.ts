// Deliveries, their items and their links as the API shows them. Links never show the token or its hash.
import type { Db } from '../db/db.ts';
import * as o from '../http/view.ts';
import type { ItemState } from './gather.ts';
import { itemStates } from './gather.ts';
import { deliveryItems, type DeliveryLinkRow, type DeliveryRow } from './store.ts';

export const presentDelivery = (d: DeliveryRow, itemCount: number) => ({
  id: d.id, organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
  title: d.title, note: d.note, status: d.status, version: d.version, itemCount,
  createdBy: d.created_by, createdAt: d.created_at, updatedAt: d.updated_at, approvedBy: d.approved_by, approvedAt: d.approved_at,
});

const presentItem = ({ item, artifact, qa, review, gaps }: ItemState) => ({
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
  review: review ? { reviewId: review.reviewId, status: review.status, approved: review.approved, decidedBy: review.decidedBy, decidedAt: review.decidedAt } : null,
  gaps: gaps.map((g) => g.gap),
});

/** The delivery with its items, each with its QA and review verdict on the item's hash, and the gaps to approval. */
export function presentDeliveryDetail(db: Db, d: DeliveryRow) {
  const states = itemStates(db, d.project_id, deliveryItems(db, d.id));
  const gaps = states.flatMap((s) => s.gaps);
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
