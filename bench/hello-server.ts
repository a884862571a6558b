// The baseline for bench/http-context.bench.ts: a bare node:http hello world on 127.0.0.1 and an
// ephemeral port, printing the same "listening on http://HOST:PORT" line as `svc serve`, with the
// same keep-alive timeout. Stops on SIGTERM/SIGINT.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const server = http.createServer({ keepAliveTimeout: 5_000 }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': '12' });
  res.end('hello world\n');
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});

const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
