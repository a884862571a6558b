// Retry delays of failed attempts: exponential from a base (doubling per failed attempt, capped at
// one hour, as notification deliveries) with equal jitter, so that jobs that failed together do not
// retry together.
import { retryDelayMs } from '../../platform/notifications/delivery.ts';

export function jobRetryDelayMs(failedAttempts: number, baseMs: number, random: () => number = Math.random): number {
  const d = retryDelayMs(failedAttempts, baseMs);
  return Math.round(d / 2 + random() * (d / 2));
}
