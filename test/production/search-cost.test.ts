// Found by the OpenAPI fuzz (test/http/fuzz.test.ts, FUZZ_SEED=7 FUZZ_RUNS=40): one search blocked the
// whole service. FUZZ had stored 10,000-character runs of one letter (a task description at its
// limit); FTS5's snippet() walks every phrase instance of each result (about 3 s per such document),
// and the search answered after more than 20 s, the event loop blocked for every tenant meanwhile.
// The snippet is now cut in JavaScript around the first match, linear in the document.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';

test('a search over long repetitive documents answers at once, with a highlighted snippet', async (t) => {
  const s = await startTestServer(t);
  const { token } = await member(s, 'producer');
  for (let i = 0; i < 5; i++) {
    const r = await s.call('POST', '/api/tasks', { token, body: { title: `Lantern ${i}`, description: 'x'.repeat(10_000) } });
    assert.equal(r.status, 201, r.text);
  }
  for (const q of ['xxx', 'X'.repeat(200), 'lantern xx']) {
    const started = performance.now();
    const r = await s.call('GET', `/api/search?q=${encodeURIComponent(q)}&limit=100`, { token });
    const ms = performance.now() - started;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.length, 5, q);
    assert.ok(ms < 1500, `${q}: ${Math.round(ms)} ms`);
    const { text, highlights } = r.body[0].snippet;
    assert.equal(highlights.length, 1, JSON.stringify(r.body[0].snippet));
    assert.ok(text.length <= highlights[0][1] - highlights[0][0] + 2 * 24 + 2, `the match and about 24 characters either side: ${text}`);
    const marked = text.slice(highlights[0][0], highlights[0][1]).toLowerCase();
    assert.ok(q.toLowerCase().split(' ').includes(marked), `${q}: ${marked}`);
  }
});
