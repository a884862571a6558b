// Array methods for callbacks that await (a query per item): one item after the other, in order, so
// the statements run in the order the items come and each item's work ends before the next begins.
// Prefer one set-based query where the items are many; these keep small loops readable.

type Each<T, U> = (item: T, index: number) => Promise<U> | U;

export async function mapSeq<T, U>(items: readonly T[], fn: Each<T, U>): Promise<U[]> {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) out.push(await fn(items[i], i));
  return out;
}

export async function forEachSeq<T>(items: readonly T[], fn: Each<T, unknown>): Promise<void> {
  for (let i = 0; i < items.length; i++) await fn(items[i], i);
}

export async function filterSeq<T>(items: readonly T[], fn: Each<T, unknown>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < items.length; i++) if (await fn(items[i], i)) out.push(items[i]);
  return out;
}

export async function flatMapSeq<T, U>(items: readonly T[], fn: Each<T, U | readonly U[]>): Promise<U[]> {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) {
    const r = await fn(items[i], i);
    if (Array.isArray(r)) out.push(...(r as readonly U[]));
    else out.push(r as U);
  }
  return out;
}
