// The per-job work the queue peers do, the same as a svc chat job's call: one POST of an
// OpenAI-style chat request to svc model-server's /v1/chat/completions over a keep-alive node:http
// Agent (as svc's transport, src/generation/connectors/protocols/transport.ts), the answer parsed.
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: 16, scheduling: 'lifo' });

export interface ChatAnswer { model: string; choices: Array<{ message: { content: string } }> }

export function chat(modelUrl: string, prompt: string): Promise<ChatAnswer> {
  const body = JSON.stringify({
    model: 'svc-chat',
    messages: [
      { role: 'system', content: 'Production context: Bench Studio / Dramas / Night Train; a chat job.' },
      { role: 'user', content: prompt },
    ],
  });
  const url = new URL('/v1/chat/completions', modelUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({
      agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`model server: ${res.statusCode}`));
        else resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatAnswer);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What every peer worker process does around its queue: prints "ready" once set up, starts
 * working at the bench's "go" line on stdin, and stops cleanly on SIGTERM.
 */
export function peerMain(setUp: () => Promise<{ go(): void; stop(): Promise<void> }>): void {
  void (async () => {
    const worker = await setUp();
    let stopping = false;
    process.on('SIGTERM', () => {
      if (stopping) return;
      stopping = true;
      void worker.stop().then(() => process.exit(0), (err: unknown) => { process.stderr.write(`${String(err)}\n`); process.exit(1); });
    });
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (text: string) => { if (text.includes('go')) worker.go(); });
    process.stdout.write('ready\n');
  })().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}

export const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
