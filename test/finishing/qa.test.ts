// QA over HTTP with real media: the model server renders clips with deliberate defects (black
// stretch, silent track, full-scale tone, still stretch), the worker registers them, and a QA run
// measures them with ffmpeg (blackdetect, freezedetect, ebur128 true peak) against the project's
// delivery spec. Also: the spec's defaults, validation and audit; access, listing and tenant scope of
// QA runs; qaVerdictOf; the blocking workflow gates decided by a QA run (non-blocking ones left to a
// person), re-decided by a later QA run unless a person decided them, and the shot's status and work
// item following QA; the archived-project rule; at most 2 ffmpeg processes for all concurrent QA runs together;
// a run whose client went away stops and writes nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { withScope } from '../../src/directory/context.ts';
import { closedSignal, runQa } from '../../src/finishing/qa/run.ts';
import { member } from '../helpers/factories.ts';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { mediaWorld, shotVideo, type MediaWorld } from '../helpers/media.ts';
import { waitJob } from '../helpers/jobs.ts';
import { qaVerdictOf } from '../../src/finishing/qa/verdict.ts';
import { DEFAULT_SPEC } from '../../src/production/projects/spec.ts';
import { parseMeasureLog } from '../../src/finishing/qa/measure.ts';

serversRunTheWorker();

const SIZE = '180x320';
const SPEC = { width: 180, height: 320 };

const audits = async (s: TestServer, action: string, targetId?: string) =>
  await s.db.all<{ target_id: string; metadata: string }>(
    'SELECT target_id, metadata FROM audit_log WHERE action = ? AND (target_id = ?2 OR ?2 IS NULL) ORDER BY seq', action, targetId ?? null);

async function qa(w: MediaWorld, body: Record<string, unknown>, token = w.token) {
  const r = await w.s.call('POST', '/api/production/qa/run', { token, body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** The checks of one artifact in a QA run answer, by key. */
function checksOf(run: any, artifactId: string): Record<string, any> {
  const a = run.artifacts.find((x: any) => x.artifactId === artifactId);
  assert.ok(a, `artifact ${artifactId} not in the run: ${JSON.stringify(run.artifacts.map((x: any) => x.artifactId))}`);
  return Object.fromEntries(a.checks.map((c: any) => [c.key, c]));
}

async function defective(w: MediaWorld, defect: string | null, seconds: number, prompt: string) {
  await w.m.control({ videoDefect: defect });
  try {
    return await shotVideo(w, w.shotIds[0], prompt, { seconds, size: SIZE });
  } finally {
    await w.m.control({ videoDefect: null });
  }
}

test('QA measures real values: a black stretch at its time code, a silent track, a loud tone by true peak, a still stretch, a changed file', async (t) => {
  const w = await mediaWorld(t);
  const put = await w.s.call('PUT', '/api/production/delivery-spec', { token: w.token, body: SPEC });
  assert.equal(put.status, 200, put.text);

  // A normal clip passes every check (the model server's tone is about -24 LUFS, true peak about -20 dBTP).
  const good = await defective(w, null, 1, 'a teal harbour at noon');
  const first = await qa(w, { shotId: w.shotIds[0] });
  assert.deepEqual([first.target, first.result, first.artifactCount], [{ kind: 'shot', id: w.shotIds[0] }, 'pass', 1]);
  const ok = checksOf(first, good.id);
  assert.deepEqual(Object.keys(ok), ['evidence', 'resolution', 'aspect_ratio', 'frame_rate', 'duration', 'audio', 'loudness', 'true_peak', 'black', 'frozen', 'collage']);
  assert.ok(Object.values(ok).every((c: any) => c.result === 'pass'), JSON.stringify(ok));
  assert.deepEqual(ok.resolution.measured, { width: 180, height: 320 });
  assert.equal(ok.evidence.measured.sha256, good.contentSha256);
  assert.ok(ok.loudness.measured.integratedLufs < -15 && ok.loudness.measured.integratedLufs > -30, JSON.stringify(ok.loudness));
  assert.ok(ok.true_peak.measured.truePeakDbtp < -10, JSON.stringify(ok.true_peak));
  assert.deepEqual(first.spec.width, 180);

  // Black frames from 1 s to 3 s: the black check fails (blocking) at about 1000 ms, for about 2 s.
  const black = await defective(w, 'black', 4, 'a teal harbour at noon');
  assert.notEqual(black.contentSha256, good.contentSha256);
  const r1 = await qa(w, { artifactIds: [black.id] });
  assert.equal(r1.result, 'fail');
  const b = checksOf(r1, black.id);
  assert.deepEqual([b.black.result, b.black.blocking], ['fail', true]);
  assert.ok(Math.abs(b.black.timeCodeMs - 1000) <= 50, `black starts at ${b.black.timeCodeMs}`);
  const stretch = b.black.measured.stretches[0];
  assert.equal(b.black.measured.stretches.length, 1);
  assert.ok(Math.abs(stretch.durationMs - 2000) <= 120, JSON.stringify(stretch));
  assert.match(b.black.message, /00:00:01\.0\d\d-00:00:03\.\d{3}/);
  assert.equal(b.audio.result, 'pass');
  assert.deepEqual(r1.artifacts[0].failing, ['black']);

  // A silent track: the audio check fails; true peak of digital silence is -inf (null).
  const silent = await defective(w, 'silent', 1, 'a teal harbour at noon');
  const r2 = await qa(w, { artifactIds: [silent.id] });
  const si = checksOf(r2, silent.id);
  assert.deepEqual([si.audio.result, si.audio.measured.track, si.audio.measured.silent], ['fail', true, true]);
  assert.equal(si.audio.measured.truePeakDbtp, null);
  assert.equal(si.loudness.result, 'warn', 'loudness is not blocking');
  assert.equal(si.loudness.measured.integratedLufs, -70);
  assert.deepEqual(r2.artifacts[0].failing, ['audio']);

  // A full-scale square tone: true peak far above -1 dBTP fails; loudness far above target only warns.
  const loud = await defective(w, 'loud', 1, 'a teal harbour at noon');
  const r3 = await qa(w, { artifactIds: [loud.id] });
  const lo = checksOf(r3, loud.id);
  assert.equal(lo.true_peak.result, 'fail');
  assert.ok(lo.true_peak.measured.truePeakDbtp > 0, JSON.stringify(lo.true_peak));
  assert.deepEqual(lo.true_peak.expected, { maxDbtp: -1 });
  assert.deepEqual([lo.loudness.result, lo.audio.result], ['warn', 'pass']);
  assert.ok(lo.loudness.measured.integratedLufs > -5, JSON.stringify(lo.loudness));
  assert.deepEqual(r3.artifacts[0].failing, ['true_peak']);

  // A still stretch from 1 s to 3 s: frozen warns (not blocking) at about 1000 ms; the run is warn.
  const frozen = await defective(w, 'frozen', 4, 'a teal harbour at noon');
  const r4 = await qa(w, { artifactIds: [frozen.id] });
  const fr = checksOf(r4, frozen.id);
  assert.deepEqual([fr.frozen.result, fr.frozen.blocking, fr.black.result], ['warn', false, 'pass']);
  assert.ok(Math.abs(fr.frozen.timeCodeMs - 1000) <= 100, `still from ${fr.frozen.timeCodeMs}`);
  assert.equal(r4.result, 'warn');
  assert.deepEqual(r4.artifacts[0].failing, []);

  // A duration target on the shot: a 4 s clip against 1.5 s warns (not blocking), with the difference.
  const target = await w.s.call('PATCH', `/api/production/shots/${w.shotIds[0]}`, { token: w.token, body: { durationTargetMs: 1500 } });
  assert.equal(target.status, 200, target.text);
  const dur = checksOf(await qa(w, { artifactIds: [frozen.id] }), frozen.id).duration;
  assert.deepEqual([dur.result, dur.blocking, dur.expected], ['warn', false, { durationMs: 1500, toleranceMs: 500 }]);
  assert.ok(Math.abs(dur.measured.offByMs - 2500) <= 100, JSON.stringify(dur));

  // qaVerdictOf: the newest run that checked exactly these bytes.
  const pid = w.tree.projectId;
  assert.deepEqual(await qaVerdictOf(w.s.db, pid, black.id, black.contentSha256), { runId: r1.id, result: 'fail', failing: ['black'], checkedAt: r1.createdAt });
  const frozenVerdict = (await qaVerdictOf(w.s.db, pid, frozen.id, frozen.contentSha256))!;
  assert.deepEqual([frozenVerdict.result, frozenVerdict.failing], ['warn', []]);
  assert.equal(await qaVerdictOf(w.s.db, pid, black.id, good.contentSha256), null, 'another hash has no verdict');
  assert.equal(await qaVerdictOf(w.s.db, 'prj_other', black.id, black.contentSha256), null, 'another project has no verdict');
  // The shot's newest video is now the frozen clip: a shot run checks it, and a newer run wins.
  const r5 = await qa(w, { shotId: w.shotIds[0] });
  assert.deepEqual(r5.artifacts.map((a: any) => a.artifactId), [frozen.id]);
  assert.equal((await qaVerdictOf(w.s.db, pid, frozen.id, frozen.contentSha256))!.runId, r5.id);
  // The fault is validated like the others.
  const wrong = await fetch(`${w.m.url}/control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ videoDefect: 'purple' }) });
  assert.equal(wrong.status, 422);

  // Several QA runs at once share one limit: never more than 2 ffmpeg processes of this server.
  const ffmpegChildren = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const end = stat.lastIndexOf(')');
      return stat.slice(stat.indexOf('(') + 1, end).startsWith('ffmpeg') && Number(stat.slice(end + 2).split(' ')[1]) === process.pid;
    } catch {
      return false;
    }
  }).length;
  let most = 0;
  const sampler = setInterval(() => { most = Math.max(most, ffmpegChildren()); }, 5);
  try {
    const together = await Promise.all([0, 1, 2].map(() => qa(w, { artifactIds: [black.id, frozen.id, loud.id] })));
    assert.ok(together.every((r) => r.artifactCount === 3));
  } finally {
    clearInterval(sampler);
  }
  assert.ok(most >= 1 && most <= 2, `${most} ffmpeg processes at once`);

  // A run whose client went away stops measuring and writes nothing (499).
  const runsBefore = (await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM qa_runs'))!.n;
  const scoped = withScope(w.s.operator(), w.tree);
  const leaving = new AbortController();
  const stopped = runQa(scoped, { artifactIds: [black.id, frozen.id, loud.id] }, leaving.signal);
  setTimeout(() => leaving.abort(), 20);
  await assert.rejects(stopped, (err: any) => err.status === 499 && err.code === 'client_closed_request');
  await assert.rejects(runQa(scoped, { artifactIds: [good.id] }, AbortSignal.abort()), (err: any) => err.status === 499);
  assert.equal((await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM qa_runs'))!.n, runsBefore);
  // closedSignal: aborts when the client closes the connection before the answer, not after a sent answer.
  const signals: AbortSignal[] = [];
  const server = http.createServer((req, res) => {
    signals.push(closedSignal(res));
    if (req.url === '/answer') res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/answer`)).text(), 'ok');
  const hangUp = new AbortController();
  const pending = fetch(`http://127.0.0.1:${port}/wait`, { signal: hangUp.signal }).catch(() => null);
  while (signals.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  hangUp.abort();
  await pending;
  while (!signals[1].aborted) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(signals[0].aborted, false, 'an answered request is not aborted');
  assert.equal((signals[1].reason).status, 499);

  // A changed file and a missing file: evidence fails (blocking), nothing else is measured, no 500.
  fs.appendFileSync(path.join(w.s.config.storageDir, good.path), Buffer.from('tampered'));
  fs.rmSync(path.join(w.s.config.storageDir, silent.path));
  const r6 = await qa(w, { artifactIds: [good.id, silent.id] });
  const changed = checksOf(r6, good.id);
  assert.deepEqual(Object.keys(changed), ['evidence']);
  assert.equal(changed.evidence.result, 'fail');
  assert.match(changed.evidence.message, /bytes changed/);
  assert.notEqual(changed.evidence.measured.sha256, good.contentSha256);
  const gone = checksOf(r6, silent.id);
  assert.deepEqual([gone.evidence.result, gone.evidence.measured.fileExists], ['fail', false]);
  assert.equal(r6.artifacts[0].sha256, good.contentSha256, 'checks name the registered hash');
  assert.deepEqual((await qaVerdictOf(w.s.db, pid, good.id, good.contentSha256))!.failing, ['evidence']);

  // Stored: one run row and all its checks, audited with the target and result.
  const stored = (await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM qa_checks WHERE run_id = ?', r1.id))!.n;
  assert.equal(stored, r1.artifacts[0].checks.length);
  const audit = await audits(w.s, 'qa.run_completed', r1.id);
  assert.equal(audit.length, 1);
  assert.deepEqual(JSON.parse(audit[0].metadata).target, { kind: 'artifacts', id: null });
});

test('QA runs: access, validation before measuring, newest-first list with filters, tenant scope, and gates decided for covered workflow runs', async (t) => {
  const w = await mediaWorld(t, { shots: 2 });
  const { s, token } = w;
  assert.equal((await s.call('PUT', '/api/production/delivery-spec', { token, body: SPEC })).status, 200);

  // A workflow run of one video step with a blocking gate waits for QA.
  const tpl = await s.call('POST', '/api/workflows/templates', {
    token,
    body: {
      name: 'Clip', templateKey: 'clip', status: 'active',
      steps: [{ key: 'clip', label: 'Clip', jobKind: 'video', requiresShot: true, parameters: { seconds: 1, size: SIZE } }],
      gates: [{ key: 'picture_qa', label: 'Picture QA', blocking: true }, { key: 'notes', label: 'Notes', blocking: false }],
    },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const queued = await s.call('POST', `/api/workflows/templates/${tpl.body.id}/instantiate`, { token, body: { mode: 'queue', shotId: w.shotIds[1], adapter: w.id } });
  assert.equal(queued.status, 201, queued.text);
  const wfRun = queued.body;
  const job = await waitJob(s, token, wfRun.steps[0].jobId, ['completed', 'failed'], 60_000);
  assert.equal(job.status, 'completed', job.error);
  const before = await s.call('GET', `/api/workflows/runs/${wfRun.id}`, { token });
  assert.equal(before.body.status, 'awaiting_qa');

  // A QA run that does not cover the workflow run's artifacts leaves its gates pending.
  const shot1 = await shotVideo(w, w.shotIds[0], 'a yellow kite over a field', { seconds: 1, size: SIZE });
  const r1 = await qa(w, { shotId: w.shotIds[0] });
  assert.deepEqual(r1.gatesDecided, []);
  // The episode run covers it: no blocking check failed, so the blocking gate passes and the run
  // completes; the non-blocking gate is left pending for a person.
  const r2 = await qa(w, { episodeId: w.episodeId });
  assert.deepEqual(r2.target, { kind: 'episode', id: w.episodeId });
  assert.equal(r2.artifactCount, 2);
  assert.deepEqual(r2.gatesDecided.map((g: any) => [g.workflowRunId, g.gateKey, g.status]), [[wfRun.id, 'picture_qa', 'passed']]);
  const after = await s.call('GET', `/api/workflows/runs/${wfRun.id}`, { token });
  assert.equal(after.body.status, 'completed');
  assert.deepEqual(after.body.gates.map((g: any) => [g.key, g.blocking, g.status]), [['picture_qa', true, 'passed'], ['notes', false, 'pending']]);
  const gateAudit = (await audits(s, 'workflow.gate_decided', wfRun.id)).map((a) => JSON.parse(a.metadata));
  assert.deepEqual(gateAudit.map((m) => [m.gate, m.to, m.qaRunId]), [['picture_qa', 'passed', r2.id]]);
  // The second shot's clip has a continuity measure with the first shot's.
  const clip = (await s.call('GET', `/api/production/media-artifacts?jobId=${wfRun.steps[0].jobId}`, { token })).body.items[0];
  assert.deepEqual(r2.artifacts.map((a: any) => a.artifactId), [shot1.id, clip.id]);
  const second = checksOf(r2, clip.id);
  assert.deepEqual(second.continuity.measured.pairs.map((p: any) => [p.fromArtifactId, p.toArtifactId]), [[shot1.id, clip.id]]);
  const score = second.continuity.measured.pairs[0].score;
  assert.ok(score > 0 && score < 1, `score ${score}`);
  assert.equal(second.continuity.result, score >= DEFAULT_SPEC.continuityMinScore ? 'pass' : 'warn');
  assert.equal(second.continuity.blocking, false);
  assert.equal(checksOf(r2, shot1.id).continuity, undefined, 'the first shot has no previous shot');

  // A second workflow run whose clip is silent: its blocking gate fails, and the run with it.
  await w.m.control({ videoDefect: 'silent' });
  const again = await s.call('POST', `/api/workflows/templates/${tpl.body.id}/instantiate`, { token, body: { mode: 'queue', shotId: w.shotIds[1], adapter: w.id } });
  assert.equal(again.status, 201, again.text);
  assert.equal((await waitJob(s, token, again.body.steps[0].jobId, ['completed', 'failed'], 60_000)).status, 'completed');
  await w.m.control({ videoDefect: null });
  const r3 = await qa(w, { project: true });
  assert.deepEqual(r3.target, { kind: 'project', id: w.tree.projectId });
  assert.deepEqual(r3.gatesDecided.map((g: any) => [g.workflowRunId, g.gateKey, g.status, g.runStatus]),
    [[again.body.id, 'picture_qa', 'failed', 'failed']]);
  const failedRun = (await s.call('GET', `/api/workflows/runs/${again.body.id}`, { token })).body;
  assert.deepEqual(failedRun.gates.map((g: any) => [g.key, g.status]), [['picture_qa', 'failed'], ['notes', 'pending']]);
  const decidedRun = (await s.call('GET', `/api/workflows/runs/${wfRun.id}`, { token })).body;
  assert.equal(decidedRun.status, 'completed', 'a decided run is left alone');
  assert.equal(decidedRun.gates.find((g: any) => g.key === 'notes').status, 'pending', 'its non-blocking gate still waits for a person');

  // Validation: exactly one target, ids of this project, an existing artifact set; nothing is written.
  const runsBefore = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM qa_runs'))!.n;
  const bad = async (body: unknown, field: string) => {
    const r = await s.call('POST', '/api/production/qa/run', { token, body });
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(field in r.body.error.details.fields, `${field} in ${r.text}`);
  };
  const stranger = await member(s, 'org_owner');
  const foreignShot = (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ?', stranger.tree.projectId))!;
  await bad({}, 'body');
  await bad({ shotId: w.shotIds[0], episodeId: w.episodeId }, 'body');
  await bad({ project: false }, 'project');
  await bad({ artifactIds: [] }, 'artifactIds');
  await bad({ artifactIds: [shot1.id, 'art_nope'] }, 'artifactIds[1]');
  await bad({ shotId: 'shot_nope' }, 'shotId');
  await bad({ shotId: foreignShot.id }, 'shotId');
  await bad({ episodeId: 'ep_nope' }, 'episodeId');
  await bad({ shotId: w.shotIds[0], extra: 1 }, 'extra');
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM qa_runs'))!.n, runsBefore);

  // Access: no credential 401; a writer (no qa:review) 403; a reviewer may run; a viewer (delivery:view) reads only.
  assert.equal((await s.call('POST', '/api/production/qa/run', { body: { project: true } })).status, 401);
  assert.equal((await s.call('GET', '/api/production/qa/runs')).status, 401);
  const writer = await member(s, 'writer', w.tree);
  assert.equal((await s.call('POST', '/api/production/qa/run', { token: writer.token, body: { project: true } })).status, 403);
  assert.equal((await s.call('GET', '/api/production/qa/runs', { token: writer.token })).status, 403);
  assert.equal((await s.call('GET', `/api/production/qa/runs/${r1.id}`, { token: writer.token })).status, 403);
  const reviewer = await member(s, 'reviewer', w.tree);
  const byReviewer = await qa(w, { artifactIds: [shot1.id] }, reviewer.token);
  assert.equal(byReviewer.result, 'pass');
  const viewer = await member(s, 'project_viewer', w.tree);
  assert.equal((await s.call('POST', '/api/production/qa/run', { token: viewer.token, body: { artifactIds: [shot1.id] } })).status, 403);
  const read = await s.call('GET', `/api/production/qa/runs/${r2.id}`, { token: viewer.token });
  assert.equal(read.status, 200, read.text);
  assert.deepEqual(read.body.artifacts.map((a: any) => a.artifactId), r2.artifacts.map((a: any) => a.artifactId));
  assert.equal(read.body.gatesDecided, undefined);

  // The list: newest first, filters, paging; another organization's runs never show, and its ids are 404.
  const list = await s.call('GET', '/api/production/qa/runs', { token: viewer.token });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.items.map((r: any) => r.id), [byReviewer.id, r3.id, r2.id, r1.id]);
  assert.deepEqual(list.body.pagination, { page: 1, pageSize: 50, total: 4 });
  assert.equal(list.body.items[0].checks, undefined);
  const ids = async (q: string) => (await s.call('GET', `/api/production/qa/runs?${q}`, { token })).body.items.map((r: any) => r.id);
  assert.deepEqual(await ids('target=episode'), [r2.id]);
  assert.deepEqual(await ids(`target=shot&targetId=${w.shotIds[0]}`), [r1.id]);
  assert.deepEqual(await ids('result=fail'), [r3.id]);
  assert.deepEqual(await ids(`artifactId=${shot1.id}`), [byReviewer.id, r3.id, r2.id, r1.id]);
  assert.deepEqual(await ids('pageSize=1&page=2'), [r3.id]);
  assert.equal((await s.call('GET', '/api/production/qa/runs?result=maybe', { token })).status, 422);
  const theirs = await s.call('GET', '/api/production/qa/runs', { token: stranger.token });
  assert.deepEqual([theirs.status, theirs.body.items, theirs.body.pagination.total], [200, [], 0]);
  assert.equal((await s.call('GET', `/api/production/qa/runs/${r2.id}`, { token: stranger.token })).status, 404);
  assert.equal((await s.call('GET', '/api/production/qa/runs/qar_nope', { token })).status, 404);
  const foreignArt = await s.call('POST', '/api/production/qa/run', { token: stranger.token, body: { artifactIds: [shot1.id] } });
  assert.equal(foreignArt.status, 422, 'another organization\'s artifact is not in the stranger\'s project');
});

test('the delivery spec: documented defaults, validated full replacement, audit, access, and the archived-project rule', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const get = await s.call('GET', '/api/production/delivery-spec', { token: producer.token });
  assert.equal(get.status, 200, get.text);
  assert.deepEqual(
    [get.body.width, get.body.height, get.body.frameRate, get.body.truePeakMaxDbtp, get.body.loudnessTargetLufs, get.body.isDefault],
    [1080, 1920, null, -1, -23, true]);
  assert.deepEqual(get.body.defaults, { ...DEFAULT_SPEC });

  const put = await s.call('PUT', '/api/production/delivery-spec', { token: producer.token, body: { width: 720, height: 1280, frameRate: '48/2', truePeakMaxDbtp: -2 } });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual([put.body.width, put.body.height, put.body.frameRate, put.body.truePeakMaxDbtp, put.body.isDefault, put.body.updatedBy],
    [720, 1280, '24/1', -2, false, producer.user.id]);
  // A replacement: fields left out go back to their defaults.
  const again = await s.call('PUT', '/api/production/delivery-spec', { token: producer.token, body: { width: 720, height: 1280 } });
  assert.deepEqual([again.body.frameRate, again.body.truePeakMaxDbtp], [null, -1]);
  const audit = (await audits(s, 'qa.delivery_spec_updated', producer.tree.projectId)).map((a) => JSON.parse(a.metadata));
  assert.deepEqual(audit.map((m) => m.changed), [['width', 'height', 'frameRate', 'truePeakMaxDbtp'], ['frameRate', 'truePeakMaxDbtp']]);

  // Bad input: 422 naming every field, nothing stored.
  const bad = await s.call('PUT', '/api/production/delivery-spec', { token: producer.token, body: { width: 0, frameRate: '0', truePeakMaxDbtp: 'loud', colour: 'red' } });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['colour', 'truePeakMaxDbtp', 'width']);
  const zeroRate = await s.call('PUT', '/api/production/delivery-spec', { token: producer.token, body: { frameRate: '0' } });
  assert.deepEqual([zeroRate.status, Object.keys(zeroRate.body.error.details.fields)], [422, ['frameRate']]);
  assert.equal((await s.call('GET', '/api/production/delivery-spec', { token: producer.token })).body.width, 720);

  // Access: no credential 401; reading needs qa:review or delivery:view; writing delivery:approve.
  assert.equal((await s.call('GET', '/api/production/delivery-spec')).status, 401);
  assert.equal((await s.call('PUT', '/api/production/delivery-spec', { body: { width: 100 } })).status, 401);
  const roles = { writer: [403, 403], reviewer: [200, 403], project_viewer: [200, 403], art_director: [200, 403], producer: [200, 200] } as const;
  for (const [role, [read, write]] of Object.entries(roles)) {
    const m = await member(s, role as keyof typeof roles, producer.tree);
    assert.equal((await s.call('GET', '/api/production/delivery-spec', { token: m.token })).status, read, `${role} reads`);
    assert.equal((await s.call('PUT', '/api/production/delivery-spec', { token: m.token, body: { width: 720, height: 1280 } })).status, write, `${role} writes`);
  }
  // Another organization has its own spec (the defaults), never this one.
  const stranger = await member(s, 'producer');
  assert.equal((await s.call('GET', '/api/production/delivery-spec', { token: stranger.token })).body.width, 1080);

  // Archived: every write is 409 project_archived (spec, QA run), reads stay 200.
  const archived = await s.call('POST', `/api/projects/${producer.tree.projectId}/lifecycle`, { token: producer.token, body: { action: 'archive' } });
  assert.equal(archived.status, 200, archived.text);
  const writes = [
    await s.call('PUT', '/api/production/delivery-spec', { token: producer.token, body: { width: 100, height: 100 } }),
    await s.call('POST', '/api/production/qa/run', { token: producer.token, body: { project: true } }),
  ];
  for (const r of writes) assert.deepEqual([r.status, r.body.error.code], [409, 'project_archived'], r.text);
  assert.equal((await s.call('GET', '/api/production/delivery-spec', { token: producer.token })).status, 200);
  assert.equal((await s.call('GET', '/api/production/qa/runs', { token: producer.token })).status, 200);
});

test('the measure log parser takes the last ebur128 summary, pairs freeze starts and ends, and closes a still stretch at the end', () => {
  const log = [
    '    I:         -70.0 LUFS', '    Peak:       -inf dBFS',
    '[blackdetect @ 0x1] black_start:1 black_end:3.04167 black_duration:2.04167',
    '[freezedetect @ 0x2] lavfi.freezedetect.freeze_start: 0.5', '[freezedetect @ 0x2] lavfi.freezedetect.freeze_duration: 1',
    '[freezedetect @ 0x2] lavfi.freezedetect.freeze_end: 1.5', '[freezedetect @ 0x2] lavfi.freezedetect.freeze_start: 3.25',
    '    I:          -5.9 LUFS', '    Peak:        7.6 dBFS',
  ].join('\n');
  assert.deepEqual(parseMeasureLog(log, true, 4000), {
    loudness: { integratedLufs: -5.9, truePeakDbtp: 7.6 },
    black: [{ startMs: 1000, endMs: 3042, durationMs: 2042 }],
    frozen: [{ startMs: 500, endMs: 1500, durationMs: 1000 }, { startMs: 3250, endMs: 4000, durationMs: 750 }],
  });
  assert.throws(() => parseMeasureLog('no summary', true, null), /no loudness summary/);
  assert.deepEqual(parseMeasureLog('', false, null), { loudness: null, black: [], frozen: [] });
});

test('QA re-decides the gates QA decided (fail, pass, fail again; audited), never a person\'s; the shot\'s status and work item follow', async (t) => {
  const w = await mediaWorld(t);
  const { s, token } = w;
  const shotId = w.shotIds[0];
  const spec = async (body: Record<string, unknown>) => assert.equal((await s.call('PUT', '/api/production/delivery-spec', { token, body })).status, 200);
  const shotStatus = async () => (await s.call('GET', `/api/production/shots/${shotId}`, { token })).body.status;
  const toGenerate = async () => (await s.call('GET', '/api/work-items', { token })).body.items
    .filter((i: any) => i.kind === 'shot_without_media').map((i: any) => i.id);
  const runOf = async (id: string) => (await s.call('GET', `/api/workflows/runs/${id}`, { token })).body;

  const tpl = await s.call('POST', '/api/workflows/templates', {
    token,
    body: {
      name: 'Clip', templateKey: 'clip-redo', status: 'active',
      steps: [{ key: 'clip', label: 'Clip', jobKind: 'video', requiresShot: true, parameters: { seconds: 1, size: SIZE } }],
      gates: [{ key: 'picture_qa', label: 'Picture QA', blocking: true }],
    },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const instantiate = async () => {
    const r = await s.call('POST', `/api/workflows/templates/${tpl.body.id}/instantiate`, { token, body: { mode: 'queue', shotId, adapter: w.id } });
    assert.equal(r.status, 201, r.text);
    assert.equal((await waitJob(s, token, r.body.steps[0].jobId, ['completed', 'failed'], 60_000)).status, 'completed');
    return r.body.id as string;
  };
  const first = await instantiate();
  assert.equal(await shotStatus(), 'generating', 'a video job was created for the shot');
  assert.deepEqual(await toGenerate(), [shotId]);

  // A landscape spec: the portrait clip fails resolution, so QA fails the gate; the shot stays to generate.
  await spec({ width: 320, height: 180 });
  const failing = await qa(w, { shotId });
  assert.deepEqual(failing.gatesDecided.map((g: any) => [g.workflowRunId, g.status, g.runStatus]), [[first, 'failed', 'failed']]);
  assert.equal(await shotStatus(), 'generating');
  assert.deepEqual(await toGenerate(), [shotId]);

  // The spec corrected, a re-run passes the gate QA failed; the shot's video passed QA: status review, no work item.
  await spec(SPEC);
  const passing = await qa(w, { shotId });
  assert.deepEqual(passing.gatesDecided.map((g: any) => [g.workflowRunId, g.gateKey, g.status, g.runStatus]), [[first, 'picture_qa', 'passed', 'completed']]);
  const passed = await runOf(first);
  assert.equal(passed.status, 'completed');
  assert.deepEqual(passed.gates.map((g: any) => [g.key, g.status, g.qaRunId]), [['picture_qa', 'passed', passing.id]]);
  assert.equal(await shotStatus(), 'review');
  assert.deepEqual(await toGenerate(), []);

  // The same verdict again writes nothing; a failing re-run fails the gate QA passed, and the shot goes back to ready.
  assert.deepEqual((await qa(w, { shotId })).gatesDecided, []);
  await spec({ width: 320, height: 180 });
  const again = await qa(w, { shotId });
  assert.deepEqual(again.gatesDecided.map((g: any) => [g.workflowRunId, g.status, g.runStatus]), [[first, 'failed', 'failed']]);
  assert.equal(await shotStatus(), 'ready');
  assert.deepEqual(await toGenerate(), [shotId]);
  const decisions = (await audits(s, 'workflow.gate_decided', first)).map((a) => JSON.parse(a.metadata));
  assert.deepEqual(decisions.map((m) => [m.from, m.to, m.qaRunId, m.previousQaRunId]),
    [['pending', 'failed', failing.id, undefined], ['failed', 'passed', passing.id, failing.id], ['passed', 'failed', again.id, passing.id]]);
  const moves = (await audits(s, 'shot.status_changed', shotId)).map((a) => JSON.parse(a.metadata));
  assert.deepEqual(moves.map((m) => [m.changes.status.from, m.changes.status.to, m.reason]),
    [['draft', 'generating', 'video_job_created'], ['generating', 'review', 'qa_passed'], ['review', 'ready', 'qa_failed']]);

  // A person's decision stands: QA passing later leaves a gate a person failed as it is.
  const decided = await s.call('POST', `/api/workflows/runs/${first}/gates/picture_qa`, { token, body: { status: 'failed', note: 'the light is wrong' } });
  assert.equal(decided.status, 200, decided.text);
  await spec(SPEC);
  assert.deepEqual((await qa(w, { shotId })).gatesDecided, []);
  assert.deepEqual((await runOf(first)).gates.map((g: any) => [g.status, g.qaRunId, g.note]), [['failed', null, 'the light is wrong']]);
});
