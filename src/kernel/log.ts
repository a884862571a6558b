// JSON-lines logger. Lines are buffered and written at most every FLUSH_MS (one write call for a
// burst of requests instead of one per line); errors, a full buffer and flush() write at once.
export type Level = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  flush(): void;
}

export interface Sink { write(chunk: string): unknown }

const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 25;

export function createLogger(level: Level | 'silent' = 'info', sink: Sink = process.stderr): Logger {
  const min = RANK[level];
  let buffer: string[] = [];
  let size = 0;
  let scheduled = false;

  const flush = (): void => {
    scheduled = false;
    if (buffer.length === 0) return;
    const out = buffer.join('');
    buffer = [];
    size = 0;
    sink.write(out);
  };

  let lastMs = 0;
  let lastIso = '';
  const now = (): string => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };

  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] < min) return;
    const head = `{"time":"${now()}","level":"${lvl}","msg":${JSON.stringify(msg)}`;
    // A replacer makes JSON.stringify leave its fast path: only use it when a field is an Error.
    const rest = !fields ? '{}' : JSON.stringify(fields, hasError(fields) ? errorReplacer : undefined);
    const line = (rest.length > 2 ? `${head},${rest.slice(1)}` : `${head}}`) + '\n';
    buffer.push(line);
    size += line.length;
    if (size >= FLUSH_BYTES || lvl === 'error') flush();
    else if (!scheduled) {
      scheduled = true;
      setTimeout(flush, FLUSH_MS).unref();
    }
  };

  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    flush,
  };
}

function hasError(fields: Record<string, unknown>): boolean {
  for (const k in fields) if (fields[k] instanceof Error) return true;
  return false;
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

/** A log line sent by a thread to the one that started it (which writes it with its own logger). */
export interface LogMessage { type: 'log'; level: Level; msg: string; fields?: Record<string, unknown> }

/** The logger of a thread: each line goes to `port` as a LogMessage (an `err` field as its message and stack). */
export function portLogger(port: { postMessage(m: LogMessage): void }): Logger {
  const send = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    const err = fields?.err;
    const safe = err instanceof Error ? { ...fields, err: { message: err.message, stack: err.stack } } : fields;
    port.postMessage({ type: 'log', level, msg, fields: safe });
  };
  return { debug: send('debug'), info: send('info'), warn: send('warn'), error: send('error'), flush() {} };
}
