// QA of the current project: its delivery spec, QA runs over a shot, an episode, the project or a
// chosen set of artifacts, and reading the runs.
import { json, type Router } from '../../http/router.ts';
import { notFound } from '../../kernel/errors.ts';
import { pageWindow } from '../../kernel/validate.ts';
import type { Permission } from '../../directory/roles.ts';
import * as o from '../../kernel/view.ts';
import { QaRunSummaryView, QaRunView, presentRun, presentRunSummary } from './present.ts';
import { closedSignal, runQa, MAX_ARTIFACTS } from './run.ts';
import { QaRunBody, QaRunListQuery } from './schema.ts';
import { DeliverySpecView, presentSpec, putSpec, specOf, SpecBody } from '../../production/projects/spec.ts';
import { countRuns, runInProject, runsOfProject } from './store.ts';

const READ: Permission[] = ['qa:review', 'delivery:view'];

export function bindQaRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const base = { tags: ['qa'], scope: 'project' as const };

  r.get('/api/production/delivery-spec', {
    ...base, permission: READ, response: { description: 'the delivery spec', schema: DeliverySpecView },
    summary: 'The current project\'s delivery spec (the documented defaults until one is stored; isDefault tells).',
  }, async ({ ctx }) => json(200, presentSpec(await specOf(ctx.db, ctx.scope.projectId!))));

  r.put('/api/production/delivery-spec', {
    ...base, permission: 'delivery:approve', body: SpecBody, response: { description: 'the stored spec', schema: DeliverySpecView },
    summary: 'Replace the delivery spec; a field left out takes its default (audited qa.delivery_spec_updated).',
  }, async ({ ctx, body }) => json(200, presentSpec(await putSpec(ctx, body))));

  r.post('/api/production/qa/run', {
    ...base, permission: 'qa:review', body: QaRunBody, response: { status: 201, description: 'the QA run with its checks and the gates it decided', schema: QaRunView },
    summary: `Measure and check the artifacts of a shot, an episode, the project or a chosen set (at most ${MAX_ARTIFACTS}); decides the blocking gates of the workflow runs it covers.`,
  }, async ({ ctx, body, res }) => {
    // A client that goes away stops the measuring (499, nothing written).
    const { run, gates } = await runQa(ctx, body, closedSignal(res));
    return json(201, await presentRun(ctx.db, run, gates));
  });

  r.get('/api/production/qa/runs', {
    ...base, permission: READ, query: QaRunListQuery, response: { description: 'a page of QA runs, newest first', schema: o.page(QaRunSummaryView) },
    summary: 'QA runs of the current project, newest first: { items, pagination: { page, pageSize, total } }; filters target, targetId, result, artifactId.',
  }, async ({ ctx, query }) => {
    const { page, pageSize, offset } = pageWindow(query.page, query.pageSize);
    const f = { targetKind: query.target ?? null, targetId: query.targetId ?? null, result: query.result ?? null, artifactId: query.artifactId ?? null };
    const rows = await runsOfProject(ctx.db, ctx.scope.projectId!, f, pageSize, offset);
    return json(200, { items: rows.map(presentRunSummary), pagination: { page, pageSize, total: await countRuns(ctx.db, ctx.scope.projectId!, f) } });
  });

  r.get('/api/production/qa/runs/:qaRunId', {
    ...base, permission: READ, response: { description: 'the QA run', schema: QaRunView }, summary: 'A QA run with the spec it used and every artifact\'s checks (measured value, expected, time code).',
  }, async ({ ctx, params }) => {
    const run = await runInProject(ctx.db, ctx.scope.projectId!, params.qaRunId);
    if (!run) throw notFound('no such QA run in this project');
    return json(200, await presentRun(ctx.db, run));
  });
}
