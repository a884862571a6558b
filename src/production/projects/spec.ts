// A project's delivery spec: what QA measures artifacts against. Stored as JSON in
// project_delivery_specs; a project without a row uses DEFAULT_SPEC. PUT replaces the whole spec:
// a field left out takes its default.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { validationFailed } from '../../kernel/errors.ts';
import * as v from '../../kernel/validate.ts';
import * as o from '../../kernel/view.ts';
import { record } from '../../platform/audit/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { parseFrameRate } from '../../media-tools/compose.ts';

export interface DeliverySpec {
  /** Picture size of delivered video, in pixels (portrait 1080x1920 by default). */
  width: number;
  height: number;
  /** 'num/den' or a whole number of frames a second; null = any rate. */
  frameRate: string | null;
  /** How far a shot video's duration may be from the shot's target. */
  durationToleranceMs: number;
  /** EBU R128 integrated loudness target and the tolerance around it. */
  loudnessTargetLufs: number;
  loudnessToleranceLu: number;
  /** Highest allowed true peak. */
  truePeakMaxDbtp: number;
  /** Audio whose true peak stays below this is silence. */
  silenceMaxDbtp: number;
  /** Shortest black stretch reported (blackdetect d), and the darkness of a black pixel (pix_th, 0..1). */
  blackMinSeconds: number;
  blackPixelThreshold: number;
  /** Shortest still stretch reported (freezedetect d) and the noise under which frames count as equal (freezedetect n). */
  freezeMinSeconds: number;
  freezeNoiseDb: number;
  /** Lowest continuity score (src/media-tools/signature.ts, 0..1) between consecutive shots before a warning. */
  continuityMinScore: number;
}

export const DEFAULT_SPEC: Readonly<DeliverySpec> = Object.freeze({
  width: 1080, height: 1920, frameRate: null, durationToleranceMs: 500,
  loudnessTargetLufs: -23, loudnessToleranceLu: 2, truePeakMaxDbtp: -1, silenceMaxDbtp: -60,
  blackMinSeconds: 0.5, blackPixelThreshold: 0.1, freezeMinSeconds: 1, freezeNoiseDb: -60,
  continuityMinScore: 0.3,
});

export const SpecBody = v.object({
  width: v.optional(v.int({ min: 16, max: 8192, description: 'pixels, default 1080' })),
  height: v.optional(v.int({ min: 16, max: 8192, description: 'pixels, default 1920' })),
  frameRate: v.optional(v.nullable(v.string({ max: 20, pattern: /^\d{1,4}(\/\d{1,4})?$/, description: "'24', '24/1', '30000/1001'; null = any (default)" }))),
  durationToleranceMs: v.optional(v.int({ min: 0, max: 60_000, description: 'default 500' })),
  loudnessTargetLufs: v.optional(v.number({ min: -70, max: 0, description: 'default -23 (EBU R128)' })),
  loudnessToleranceLu: v.optional(v.number({ min: 0, max: 20, description: 'default 2' })),
  truePeakMaxDbtp: v.optional(v.number({ min: -30, max: 6, description: 'default -1.0' })),
  silenceMaxDbtp: v.optional(v.number({ min: -120, max: -20, description: 'default -60' })),
  blackMinSeconds: v.optional(v.number({ min: 0.05, max: 60, description: 'default 0.5' })),
  blackPixelThreshold: v.optional(v.number({ min: 0, max: 1, description: 'default 0.1' })),
  freezeMinSeconds: v.optional(v.number({ min: 0.1, max: 60, description: 'default 1' })),
  freezeNoiseDb: v.optional(v.number({ min: -90, max: -10, description: 'default -60' })),
  continuityMinScore: v.optional(v.number({ min: 0, max: 1, description: 'default 0.3' })),
});
type SpecInput = v.Infer<typeof SpecBody>;

interface SpecRow { project_id: string; spec: string; updated_by: string | null; updated_at: string }

export interface StoredSpec { spec: DeliverySpec; isDefault: boolean; updatedBy: string | null; updatedAt: string | null }

/** The project's spec (stored fields over the defaults, so a later new field has its default). */
export async function specOf(db: Db, projectId: string): Promise<StoredSpec> {
  const row = await db.get<SpecRow>('SELECT * FROM project_delivery_specs WHERE project_id = ?', projectId);
  if (!row) return { spec: { ...DEFAULT_SPEC }, isDefault: true, updatedBy: null, updatedAt: null };
  return { spec: { ...DEFAULT_SPEC, ...(JSON.parse(row.spec) as Partial<DeliverySpec>) }, isDefault: false, updatedBy: row.updated_by, updatedAt: row.updated_at };
}

/** Replaces the current project's spec (fields left out take their default); audited qa.delivery_spec_updated. */
export async function putSpec(ctx: Ctx, body: SpecInput): Promise<StoredSpec> {
  const projectId = ctx.scope.projectId!;
  const spec: DeliverySpec = { ...DEFAULT_SPEC };
  for (const [k, val] of Object.entries(body)) if (val !== undefined) (spec as unknown as Record<string, unknown>)[k] = val;
  if (spec.frameRate !== null) {
    const rate = parseFrameRate(spec.frameRate);
    if (!rate) throw validationFailed({ frameRate: 'must be a positive rate such as 24 or 30000/1001' });
    spec.frameRate = `${rate.num}/${rate.den}`;
  }
  const project = (await projectById(ctx.db, projectId))!;
  const before = (await specOf(ctx.db, projectId)).spec;
  const at = ctx.now().toISOString();
  return await ctx.db.tx(async () => {
    await ctx.db.run(
      `INSERT INTO project_delivery_specs (project_id, organization_id, spec, updated_by, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (project_id) DO UPDATE SET spec = excluded.spec, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
      projectId, project.organization_id, JSON.stringify(spec), ctx.actor.userId, at);
    const changed = (Object.keys(spec) as Array<keyof DeliverySpec>).filter((k) => spec[k] !== before[k]);
    await record(ctx, { action: 'qa.delivery_spec_updated', targetType: 'project', targetId: projectId, metadata: { changed, spec } });
    return await specOf(ctx.db, projectId);
  });
}

/** The spec's fields (DeliverySpec), as QA runs record them. */
export const DeliverySpecFieldsView = o.named('DeliverySpecFields', o.object({
  width: o.int('pixels'), height: o.int('pixels'), frameRate: o.nullable(o.text({ description: 'num/den; null = any rate' })),
  durationToleranceMs: o.int(), loudnessTargetLufs: o.number(), loudnessToleranceLu: o.number(), truePeakMaxDbtp: o.number(),
  silenceMaxDbtp: o.number(), blackMinSeconds: o.number(), blackPixelThreshold: o.number(), freezeMinSeconds: o.number(),
  freezeNoiseDb: o.number(), continuityMinScore: o.number(),
}));

export const DeliverySpecView = o.named('DeliverySpec', o.extend(DeliverySpecFieldsView, {
  isDefault: o.bool('true until a spec is stored'), updatedBy: o.nullable(o.text()), updatedAt: o.nullable(o.time()),
  defaults: DeliverySpecFieldsView,
}));

export const presentSpec = (s: StoredSpec): o.Out<typeof DeliverySpecView> => ({ ...s.spec, isDefault: s.isDefault, updatedBy: s.updatedBy, updatedAt: s.updatedAt, defaults: DEFAULT_SPEC });
