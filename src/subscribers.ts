// Every event subscription, bound in one place when a thread starts (the server's main thread and
// the worker thread): who reacts to which news (src/directory/events.ts). A wing emits its news
// with ctx.emit and never names the wings that react; this file does, from above them all.
import { events } from './directory/context.ts';
import { reopenOnRegistered } from './finishing/review/reopen.ts';

export function bindSubscribers(): void {
  // A newly registered artifact replaces the one under review: finishing re-opens those reviews.
  events.subscribe('media.artifacts_registered', 'review.reopen', reopenOnRegistered, 're-opening reviews');
}
