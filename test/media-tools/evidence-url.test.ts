// Media evidence when the store hands ffmpeg a URL (what the s3 driver's mediaInput gives: a signed
// URL read with range requests) instead of a path: a store on a temporary folder whose mediaInput is
// an HTTP URL with range support. The evidence is the same as from the file itself; a URL never
// reaches an error message; the composite check of an image reads the URL too. A stored file that is
// really a playlist (HLS) never makes ffmpeg fetch the addresses it names.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { detectComposite } from '../../src/media-tools/collage.ts';
import { analyzeMedia, MediaError } from '../../src/media-tools/evidence.ts';
import { runFfmpeg } from '../../src/media-tools/ffmpeg.ts';
import { decodeFirstAndLast } from '../../src/media-tools/frames.ts';
import { probeMedia } from '../../src/media-tools/probe.ts';

let root: string;
let server: http.Server;
let base: string;
const requests: string[] = [];

/** A LocalStore whose mediaInput is a URL on a range server over its folder (the s3 driver's shape). */
class UrlStore extends LocalStore {
  override async mediaInput(key: string): Promise<string> {
    this.resolve(key);
    return `${base}/${key}?X-Amz-Signature=not-a-real-signature`;
  }
}

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-media-url-'));
  server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    requests.push(`${req.method} ${url.pathname} ${req.headers.range ?? ''}`);
    const file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file)) return void res.writeHead(404).end();
    const size = fs.statSync(file).size;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m && m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
    res.writeHead(m ? 206 : 200, {
      'accept-ranges': 'bytes', 'content-length': end - start + 1, ...(m ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
    });
    fs.createReadStream(file, { start, end }).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const ff = (args: string[]) => runFfmpeg(['-v', 'error', '-y', ...args], { timeoutMs: 60_000 });

test('a video read through a URL gives the same evidence and frames as the file itself', async () => {
  const rel = 'outputs/job_u/video-1.mp4';
  fs.mkdirSync(path.join(root, 'outputs/job_u'), { recursive: true });
  const seg = (c: string) => ['-f', 'lavfi', '-i', `color=c=${c}:s=320x240:r=25:d=1`];
  await ff([...seg('red'), ...seg('blue'), '-f', 'lavfi', '-i', 'sine=f=440:d=2', '-filter_complex', '[0][1]concat=n=2:v=1:a=0[v]',
    '-map', '[v]', '-map', '2:a', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', path.join(root, rel)]);
  const onFile = await analyzeMedia({ store: new LocalStore(root), relPath: rel, framesPrefix: 'frames/job_u/file' });
  requests.length = 0;
  const onUrl = await analyzeMedia({ store: new UrlStore(root), relPath: rel, framesPrefix: 'frames/job_u/url' });
  assert.ok(requests.some((r) => r.startsWith(`GET /${rel}`)), 'ffprobe and ffmpeg read the URL');
  const strip = (e: typeof onFile) => ({ ...e, firstFrame: e.firstFrame && { ...e.firstFrame, path: '' }, lastFrame: e.lastFrame && { ...e.lastFrame, path: '' } });
  assert.deepEqual(strip(onUrl), strip(onFile));
  assert.equal(onUrl.kind, 'video');
  assert.equal(onUrl.frameCount, 50);
  assert.ok(fs.readFileSync(path.join(root, 'frames/job_u/url-first.png')).equals(fs.readFileSync(path.join(root, 'frames/job_u/file-first.png'))));
  assert.ok(fs.readFileSync(path.join(root, 'frames/job_u/url-last.png')).equals(fs.readFileSync(path.join(root, 'frames/job_u/file-last.png'))));
});

test('an unreadable file behind a URL is a MediaError whose message names no URL; a picture is checked through its URL', async () => {
  const rel = 'outputs/job_u/noise.dat';
  fs.writeFileSync(path.join(root, rel), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)));
  await assert.rejects(analyzeMedia({ store: new UrlStore(root), relPath: rel, framesPrefix: 'frames/job_u/noise' }), (e: unknown) => {
    assert.ok(e instanceof MediaError && e.code === 'media_unreadable', String(e));
    assert.ok(!/https?:\/\/|Signature/.test((e as Error).message), (e as Error).message);
    return true;
  });
  const png = 'outputs/job_u/image-1.png';
  await ff(['-f', 'lavfi', '-i', 'testsrc2=s=256x256', '-frames:v', '1', path.join(root, png)]);
  const store = new UrlStore(root);
  assert.equal((await detectComposite(await store.mediaInput(png))).composite, null);
  await assert.rejects(detectComposite(`${base}/outputs/job_u/missing.png?X-Amz-Signature=secret`), (e: Error) => !/https?:\/\/|secret/.test(e.message));
});

test('a stored playlist read through its URL is refused before ffmpeg fetches any address it names', async () => {
  const rel = 'outputs/job_u/video-2.mp4';
  // An HLS playlist under a video's name: its segment is another address (here the same test server, so the fetch would be seen).
  fs.writeFileSync(path.join(root, rel), `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n${base}/internal/secret.ts\n#EXT-X-ENDLIST\n`);
  const store = new UrlStore(root);
  requests.length = 0;
  await assert.rejects(probeMedia(await store.mediaInput(rel)));
  await assert.rejects(decodeFirstAndLast(await store.mediaInput(rel)));
  // Sniffed as text, not media: the evidence step does not hand it to ffmpeg at all (whatever it answers).
  await analyzeMedia({ store, relPath: rel, framesPrefix: 'frames/job_u/playlist' }).catch(() => null);
  assert.ok(requests.some((r) => r.startsWith(`GET /${rel}`)), 'the playlist itself was read');
  assert.deepEqual(requests.filter((r) => r.includes('/internal/')), [], 'no address named by the file was fetched');
});
