// Readers of an export package for the tests, independent of the writers: every file under a folder,
// SHA-256, OpenTimelineIO validation against test/fixtures/otio-schema.json (a JSON Schema of OTIO's
// documented serialization), a CMX3600 EDL parser and an SRT parser.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';

export const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const otioSchema = JSON.parse(fs.readFileSync(new URL('../fixtures/otio-schema.json', import.meta.url), 'utf8'));
const otioValidator = new Ajv({ allErrors: true, strict: true }).compile(otioSchema);
/** Whether a parsed .otio document is valid against the schema (errors in otioErrors()). */
export const validOtio = (doc: unknown): boolean => otioValidator(doc);
export const otioErrors = () => JSON.stringify(otioValidator.errors, null, 1);

/** A CMX3600 reader of its own (not the writer's helpers): title, FCM and events with their comments. */
export function parseEdl(text: string, fps: number) {
  const frames = (tc: string) => {
    const m = /^(\d{2}):(\d{2}):(\d{2}):(\d{2})$/.exec(tc);
    assert.ok(m, `time code ${tc}`);
    return ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * fps + Number(m[4]);
  };
  const events: Array<{ n: number; reel: string; channel: string; srcIn: number; srcOut: number; recIn: number; recOut: number; clip?: string }> = [];
  let title = '';
  let fcm = '';
  for (const line of text.split(/\r\n/)) {
    if (line.startsWith('TITLE: ')) title = line.slice(7);
    else if (line.startsWith('FCM: ')) fcm = line.slice(5);
    else if (line.startsWith('* FROM CLIP NAME: ')) events.at(-1)!.clip = line.slice(18);
    else if (/^\d{3}\s/.test(line)) {
      const f = line.split(/\s+/);
      assert.equal(f.length, 8, line);
      assert.equal(f[3], 'C');
      events.push({ n: Number(f[0]), reel: f[1], channel: f[2], srcIn: frames(f[4]), srcOut: frames(f[5]), recIn: frames(f[6]), recOut: frames(f[7]) });
    } else assert.ok(line === '' || line.startsWith('* '), `unexpected EDL line: ${line}`);
  }
  return { title, fcm, events };
}

export function parseSrt(text: string) {
  const ms = (t: string) => {
    const m = /^(\d{2}):(\d{2}):(\d{2}),(\d{3})$/.exec(t)!;
    return ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]);
  };
  return text.split(/\r\n\r\n/).filter(Boolean).map((block, i) => {
    const [n, times, ...lines] = block.split(/\r\n/).filter(Boolean);
    assert.equal(Number(n), i + 1);
    const [from, to] = times.split(' --> ');
    return { startMs: ms(from), endMs: ms(to), text: lines.join('\n') };
  });
}

/** Every file under a folder, relative, sorted. */
export function filesUnder(dir: string, rel = ''): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((d) =>
    (d.isDirectory() ? filesUnder(dir, path.posix.join(rel, d.name)) : [path.posix.join(rel, d.name)])).sort();
}
