// The format of a job bound to a shot (src/generation/jobs/format.ts): the size from the delivery spec and the
// shot's aspect ratio, the duration from the shot's target, unless the job sets them; carried by every
// protocol (openai-compatible size/seconds, the http-json contract's parameters, ComfyUI placeholders);
// the bundled model server renders what it is asked, ComfyUI bridge included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { frameFor } from '../../src/generation/jobs/format.ts';
import { placeholders } from '../../src/generation/connectors/protocols/comfyui.ts';
import { probeMedia } from '../../src/media-tools/probe.ts';
import { startModelServer } from '../../tools/model-server/server.ts';
import { firstShot } from '../helpers/media.ts';
import { connector, jobWorld } from '../helpers/jobs.ts';

test('frameFor: the spec\'s size for its own ratio, else the largest frame of the shot\'s ratio inside it, even sides', () => {
  const portrait = { width: 1080, height: 1920 };
  assert.deepEqual(frameFor(portrait, '9:16'), { width: 1080, height: 1920 });
  assert.deepEqual(frameFor(portrait, '16:9'), { width: 1080, height: 608 });
  assert.deepEqual(frameFor(portrait, '1:1'), { width: 1080, height: 1080 });
  assert.deepEqual(frameFor(portrait, '4:5'), { width: 1080, height: 1350 });
  const landscape = { width: 1920, height: 1080 };
  assert.deepEqual(frameFor(landscape, '16:9'), { width: 1920, height: 1080 });
  assert.deepEqual(frameFor(landscape, '9:16'), { width: 608, height: 1080 });
  assert.deepEqual(frameFor({ width: 180, height: 320 }, '9:16'), { width: 180, height: 320 });
});

test('ComfyUI placeholders carry seconds, fps and frames (numbers when exact)', () => {
  const contract = { parameters: { width: 1080, height: 1920, seconds: 1.5 }, prompt: 'p', negativePrompt: null } as never;
  const v = placeholders(contract, { jobId: 'job_x', attempt: 1, kind: 'video', model: null, deadline: new Date().toISOString() });
  assert.deepEqual([v.width, v.height, v.seconds, v.fps, v.frames], [1080, 1920, 1.5, 24, 36]);
  const none = placeholders({ parameters: {}, prompt: 'p', negativePrompt: null } as never, { jobId: 'job_x', attempt: 1, kind: 'video', model: null, deadline: '' });
  assert.deepEqual([none.seconds, none.fps, none.frames], [4, 24, 96]);
});

test('a job bound to a shot takes the shot\'s format unless it sets it; every protocol carries it', async (t) => {
  const w = await jobWorld(t);
  const { s, token } = w;
  const shot = await firstShot(s, w.tree.projectId);
  const patch = async (body: Record<string, unknown>) => assert.equal((await s.call('PATCH', `/api/production/shots/${shot.id}`, { token, body })).status, 200);
  const dry = async (body: Record<string, unknown>, connectorId = w.id) => {
    const r = await s.call('POST', '/api/adapters/dry-run', { token, body: { connectorId, shotId: shot.id, prompt: 'a sunlit yellow door', ...body } });
    assert.equal(r.status, 200, r.text);
    return r.body.body;
  };

  // The default spec (1080x1920) and the starter shot (9:16) with a 1.5 s target.
  await patch({ durationTargetMs: 1500 });
  assert.deepEqual([(await dry({ kind: 'video' })).size, (await dry({ kind: 'video' })).seconds], ['1080x1920', '1.5']);
  assert.equal((await dry({ kind: 'image' })).size, '1080x1920');
  // A 16:9 shot fits inside the portrait frame; what the job sets wins, field by field.
  await patch({ aspectRatio: '16:9' });
  assert.equal((await dry({ kind: 'video' })).size, '1080x608');
  assert.deepEqual(await dry({ kind: 'video', parameters: { size: '320x180' } }).then((b) => [b.size, b.seconds]), ['320x180', '1.5']);
  assert.deepEqual(await dry({ kind: 'video', parameters: { seconds: 3 } }).then((b) => [b.size, b.seconds]), ['1080x608', '3']);
  // The spec changes the size; without a target there is no seconds; a job bound to no shot gets nothing.
  assert.equal((await s.call('PUT', '/api/production/delivery-spec', { token, body: { width: 720, height: 1280 } })).status, 200);
  await patch({ aspectRatio: '9:16', durationTargetMs: null });
  assert.deepEqual(await dry({ kind: 'video' }).then((b) => [b.size, b.seconds]), ['720x1280', undefined]);
  assert.deepEqual(await dry({ kind: 'video', shotId: null }).then((b) => [b.size, b.seconds]), [undefined, undefined]);
  assert.equal((await dry({ kind: 'tts' })).size, undefined, 'a voice line has no picture');

  // The stored job input holds it, and so does the http-json contract.
  await patch({ durationTargetMs: 1000 });
  const job = await s.call('POST', '/api/jobs', { token, body: { kind: 'video', connectorId: w.id, shotId: shot.id, prompt: 'a sunlit yellow door' } });
  assert.equal(job.status, 201, job.text);
  assert.deepEqual(JSON.parse((await s.db.get<{ input: string }>('SELECT input FROM generation_jobs WHERE id = ?', job.body.id))!.input).parameters,
    { width: 720, height: 1280, seconds: 1 });
  const hj = await connector(s, token, `${w.m.url}/generate`, { kind: 'http-json', label: 'http-json model server' });
  assert.deepEqual((await dry({ kind: 'video' }, hj)).contract.parameters, { width: 720, height: 1280, seconds: 1 });
});

test('the model server\'s ComfyUI bridge renders a video of the asked size and length', async (t) => {
  const m = await startModelServer({ port: 0 });
  t.after(() => m.close());
  const workflow = {
    1: { class_type: 'EmptyLatentImage', inputs: { width: 180, height: 320, batch_size: 1 } },
    2: { class_type: 'CLIPTextEncode', inputs: { text: 'a sunlit yellow door' } },
    3: { class_type: 'VHS_VideoCombine', inputs: { frame_rate: 24, length: 36 } },
  };
  const submitted: any = await (await fetch(`${m.url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: workflow }) })).json();
  let entry: any;
  for (const until = Date.now() + 30_000; !entry; await new Promise((res) => setTimeout(res, 50))) {
    assert.ok(Date.now() < until, 'the prompt did not finish');
    entry = ((await (await fetch(`${m.url}/history/${submitted.prompt_id}`)).json()) as any)[submitted.prompt_id];
  }
  const ref = entry.outputs['3'].gifs[0];
  const bytes = Buffer.from(await (await fetch(`${m.url}/view?${String(new URLSearchParams(ref))}`)).arrayBuffer());
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-comfy-')), 'clip.mp4');
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  fs.writeFileSync(file, bytes);
  const probe = await probeMedia(file);
  assert.deepEqual([probe.video?.width, probe.video?.height], [180, 320]);
  assert.ok(Math.abs(probe.durationMs! - 1500) <= 100, `duration ${probe.durationMs} ms`);
});
