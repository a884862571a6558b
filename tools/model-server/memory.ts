// Jobs a client polls for (videos, ComfyUI prompts) live in memory: a restart forgets them, as a
// real provider's restart may. The oldest are dropped past a bound so a long benchmark cannot grow
// the process without limit.
export const MAX_REMEMBERED = 10_000;

export function remember<K, V>(map: Map<K, V>, key: K, value: V, max = MAX_REMEMBERED): void {
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value as K);
}
