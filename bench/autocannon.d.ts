// Minimal types for the parts of autocannon's programmatic API the benchmarks use
// (@types/autocannon is not installed; see node_modules/autocannon/lib/aggregateResult.js).
declare module 'autocannon' {
  export interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
    headers?: Record<string, string>;
    body?: string;
    /** Seconds before a request counts as a timeout. */
    timeout?: number;
    title?: string;
    /** Called with each connection's client when it is made (before its first request). */
    setupClient?: (client: Client) => void;
  }

  /** One request of a client's sequence; `context` is reset before each pass over the sequence. */
  export interface Request {
    method?: Options['method'];
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Returns the request to send (or a falsy value to restart the sequence). */
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request | null;
    onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void;
  }

  /** One connection. */
  export interface Client {
    /** Replaces the connection's sequence of requests. */
    setRequests(requests: Request[]): void;
  }

  /** A histogram summary: latency in ms, requests and throughput per second. */
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total?: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
  }

  export interface Result {
    url: string;
    connections: number;
    pipelining: number;
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Histogram & { totalCount: number };
    requests: Histogram & { total: number; sent: number };
    throughput: Histogram & { total: number };
  }

  /** A running instance: its result, and an event for each response (latency in ms). */
  export interface Instance extends PromiseLike<Result> {
    on(event: 'response', listener: (client: Client, statusCode: number, resBytes: number, responseTime: number) => void): this;
  }

  /** Without a callback it returns a thenable (an EventEmitter with then/catch). */
  export default function autocannon(opts: Options): Instance;
}
