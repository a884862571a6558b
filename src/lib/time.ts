// Times are ISO 8601 UTC strings everywhere; these helpers keep the arithmetic in one place.
export function iso(d: Date): string {
  return d.toISOString();
}

export function addMs(d: Date, ms: number): Date {
  return new Date(d.getTime() + ms);
}
