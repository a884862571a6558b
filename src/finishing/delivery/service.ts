// Deliveries of the current project: create (delivery:approve) from the episodes' newest cuts or a
// chosen set, change while draft (a new set is version + 1), approve (every item QA-passed and
// review-approved on its exact hash, the files re-hashed on disk), withdraw. Every write is audited
// and indexed for search (title, status; never a token).
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import type { RowRead } from '../../db/dialect.ts';
import { record } from '../../platform/audit/service.ts';
import { notify } from '../../platform/notifications/service.ts';
import { indexDocument } from '../../platform/search/index.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { changedOnDisk, describeGaps, gatherItems, itemStates, type Gap, type ItemInput } from './gather.ts';
import type { DeliveryCreate, DeliveryPatch } from './schema.ts';
import {
  deliveriesOfProject, deliveryInProject, deliveryItems, insertDelivery, replaceItems, setItemVerdicts, updateDelivery,
  type DeliveryItemRow, type DeliveryRow,
} from './store.ts';
import { consoleLinks } from '../../kernel/links.ts';

async function indexDelivery(ctx: Ctx, d: DeliveryRow, itemCount: number): Promise<void> {
  await indexDocument(ctx.db, {
    type: 'delivery', id: d.id, organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
    title: d.title, subtitle: `version ${d.version} \u00b7 ${itemCount} item${itemCount === 1 ? '' : 's'}`, body: d.note ?? '',
    status: d.status, updatedAt: d.updated_at,
  });
}

const itemsMeta = (items: ReadonlyArray<Pick<DeliveryItemRow, 'artifact_id' | 'artifact_sha256'>>) =>
  items.map((i) => ({ artifactId: i.artifact_id, sha256: i.artifact_sha256 }));

/** The delivery; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getDelivery(ctx: Ctx, id: string, read?: RowRead): Promise<DeliveryRow> {
  const d = await deliveryInProject(ctx.db, ctx.scope.projectId!, id, read);
  if (!d) throw notFound('no such delivery in this project');
  return d;
}

export async function listDeliveries(ctx: Ctx, q: { status?: string; page?: number; pageSize?: number }) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await deliveriesOfProject(ctx.db, ctx.scope.projectId!, { status: q.status ?? null, limit: pageSize, offset });
  return { rows, pagination: { page, pageSize, total } };
}

export async function createDelivery(ctx: Ctx, input: DeliveryCreate): Promise<DeliveryRow> {
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  return await ctx.db.tx(async () => {
    const items = await gatherItems(ctx.db, p.id, input);
    const now = ctx.now().toISOString();
    const d: DeliveryRow = {
      id: newId('dlv'), organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id,
      title: input.title, note: input.note ?? null, status: 'draft', version: 1,
      created_by: ctx.actor.userId, created_at: now, updated_at: now, approved_by: null, approved_at: null,
    };
    await insertDelivery(ctx.db, d);
    await replaceItems(ctx.db, d.id, items);
    await indexDelivery(ctx, d, items.length);
    await record(ctx, {
      action: 'delivery.created', targetType: 'delivery', targetId: d.id,
      metadata: { title: d.title, version: 1, selection: input.artifactIds ? 'artifacts' : input.episodeIds ? 'episodes' : 'all_episodes', items: itemsMeta(items) },
    });
    return d;
  });
}

/** Writes `next` over `d` as read in this transaction; 409 delivery_changed when another change came first. */
async function rewrite(ctx: Ctx, d: DeliveryRow, next: DeliveryRow): Promise<void> {
  if (!await updateDelivery(ctx.db, d, next)) {
    const now = await deliveryInProject(ctx.db, d.project_id, d.id);
    throw conflict('delivery_changed', 'the delivery changed meanwhile; reload it and try again', { version: now?.version ?? d.version });
  }
}

function draftOnly(d: DeliveryRow): void {
  if (d.status !== 'draft') throw conflict('delivery_not_draft', `the delivery is ${d.status}; only a draft can change (create a new delivery instead)`, { status: d.status });
}

const sameSet = (a: readonly ItemInput[], b: readonly DeliveryItemRow[]) =>
  a.length === b.length && a.every((x, i) => x.artifact_id === b[i].artifact_id && x.artifact_sha256 === b[i].artifact_sha256);

export async function changeDelivery(ctx: Ctx, id: string, patch: DeliveryPatch): Promise<DeliveryRow> {
  if (Object.values(patch).every((x) => x === undefined)) throw validationFailed({ body: 'name at least one field to change' });
  return await ctx.db.tx(async () => {
    const d = await getDelivery(ctx, id, { forUpdate: true });
    draftOnly(d);
    const current = await deliveryItems(ctx.db, d.id);
    const items = patch.episodeIds || patch.artifactIds ? await gatherItems(ctx.db, d.project_id, patch) : null;
    const newSet = items !== null && !sameSet(items, current);
    const next: DeliveryRow = {
      ...d, title: patch.title ?? d.title, note: patch.note !== undefined ? patch.note : d.note,
      version: newSet ? d.version + 1 : d.version, updated_at: ctx.now().toISOString(),
    };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (next.title !== d.title) changes.title = { from: d.title, to: next.title };
    if (next.note !== d.note) changes.note = { from: '(text)', to: '(text)' };
    if (newSet) changes.items = { from: itemsMeta(current), to: itemsMeta(items) };
    if (Object.keys(changes).length === 0) return d;
    await rewrite(ctx, d, next);
    if (newSet) await replaceItems(ctx.db, d.id, items);
    await indexDelivery(ctx, next, (items ?? current).length);
    await record(ctx, { action: 'delivery.updated', targetType: 'delivery', targetId: d.id, metadata: { version: next.version, changes } });
    return next;
  });
}

function notReady(gaps: Gap[]) {
  return conflict('delivery_not_ready', `the delivery cannot be approved: ${describeGaps(gaps)}`, { gaps });
}

/**
 * Approves a draft: every item's file is hashed again on disk (a changed file is an artifact_changed
 * gap), then, in one transaction, the verdicts are read again on the items' hashes; any gap is 409
 * delivery_not_ready naming them. Records the QA run and review of each item, who and when.
 */
export async function approveDelivery(ctx: Ctx, id: string): Promise<DeliveryRow> {
  const before = await getDelivery(ctx, id);
  draftOnly(before);
  const items = await deliveryItems(ctx.db, before.id);
  const diskGaps: Gap[] = [];
  for (const s of await itemStates(ctx.db, before.project_id, items)) {
    const reason = await changedOnDisk(ctx.storage, s.artifact, s.item.artifact_sha256);
    if (reason && !s.gaps.some((g) => g.gap === 'artifact_changed')) diskGaps.push({ artifactId: s.item.artifact_id, position: s.item.position, gap: 'artifact_changed', reason });
  }
  return await ctx.db.tx(async () => {
    const d = await getDelivery(ctx, id, { forUpdate: true });
    draftOnly(d);
    if (d.version !== before.version) throw conflict('delivery_changed', 'the delivery changed while it was being approved; try again', { version: d.version });
    const states = await itemStates(ctx.db, d.project_id, await deliveryItems(ctx.db, d.id));
    const gaps = [...diskGaps, ...states.flatMap((s) => s.gaps)].sort((a, b) => a.position - b.position);
    if (gaps.length > 0) throw notReady(gaps);
    const now = ctx.now().toISOString();
    for (const s of states) await setItemVerdicts(ctx.db, d.id, s.item.position, s.qa!.runId, s.review!.reviewId);
    const next: DeliveryRow = { ...d, status: 'approved', approved_by: ctx.actor.userId, approved_at: now, updated_at: now };
    await rewrite(ctx, d, next);
    await indexDelivery(ctx, next, states.length);
    await record(ctx, {
      action: 'delivery.approved', targetType: 'delivery', targetId: d.id,
      metadata: {
        version: d.version,
        items: states.map((s) => ({ artifactId: s.item.artifact_id, sha256: s.item.artifact_sha256, qaRunId: s.qa!.runId, reviewId: s.review!.reviewId })),
      },
    });
    await notify(ctx, {
      category: 'delivery', type: 'delivery.approved', organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
      subject: `Delivery approved: ${d.title}`, body: `Version ${d.version} with ${states.length} item${states.length === 1 ? '' : 's'} was approved.`,
      link: consoleLinks.delivery({ id: d.id, projectId: d.project_id }),
    });
    return next;
  });
}

/** Withdraws a draft or approved delivery (terminal): its client links stop working. */
export async function withdrawDelivery(ctx: Ctx, id: string, note: string | null): Promise<DeliveryRow> {
  return await ctx.db.tx(async () => {
    const d = await getDelivery(ctx, id, { forUpdate: true });
    if (d.status === 'withdrawn') throw conflict('delivery_withdrawn', 'the delivery is already withdrawn');
    const next: DeliveryRow = { ...d, status: 'withdrawn', updated_at: ctx.now().toISOString() };
    await rewrite(ctx, d, next);
    await indexDelivery(ctx, next, (await deliveryItems(ctx.db, d.id)).length);
    await record(ctx, { action: 'delivery.withdrawn', targetType: 'delivery', targetId: d.id, metadata: { from: d.status, version: d.version, note } });
    if (d.status === 'approved') {
      await notify(ctx, {
        category: 'delivery', type: 'delivery.withdrawn', organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
        subject: `Delivery withdrawn: ${d.title}`, body: note, link: consoleLinks.delivery({ id: d.id, projectId: d.project_id }),
      });
    }
    return next;
  });
}
