// Sliding-window limiter of failed attempts per key (an e-mail address, a client address). Memory is
// bounded: at most `maxKeys` keys are tracked, the least recently failed are forgotten first.
export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();

  private readonly max: number;
  private readonly windowMs: number;
  private readonly maxKeys: number;

  constructor(max: number, windowMs: number, maxKeys = 100_000) {
    this.max = max;
    this.windowMs = windowMs;
    this.maxKeys = maxKeys;
  }

  /** Seconds to wait before another attempt is allowed for this key; 0 when allowed now. */
  retryAfter(key: string, now: number): number {
    const list = this.recent(key, now);
    if (list.length < this.max) return 0;
    return Math.max(1, Math.ceil((list[list.length - this.max] + this.windowMs - now) / 1000));
  }

  fail(key: string, now: number): void {
    const list = this.recent(key, now);
    list.push(now);
    if (list.length > this.max) list.splice(0, list.length - this.max);
    this.failures.delete(key); // re-insert: Map order is least recently failed first
    this.failures.set(key, list);
    if (this.failures.size > this.maxKeys) this.failures.delete(this.failures.keys().next().value!);
  }

  reset(key: string): void {
    this.failures.delete(key);
  }

  private recent(key: string, now: number): number[] {
    const list = this.failures.get(key);
    if (!list) return [];
    const cutoff = now - this.windowMs;
    let i = 0;
    while (i < list.length && list[i] <= cutoff) i++;
    if (i > 0) list.splice(0, i);
    if (list.length === 0) this.failures.delete(key);
    return list;
  }
}
