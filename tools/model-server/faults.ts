// Faults the model server can be told to show, so that every path of a client (retries, time-outs,
// image-count and composite checks, cancellation of a hung call) can be driven for real. They
// apply to generation calls only; health, files, polling and this control stay well-behaved, as
// they do at a real provider that is slow or failing. The state is replaced, never mutated, so a
// handler that read it once sees one consistent set.
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { readJson, type Route } from './http.ts';
import { onlyFields, optionalBool, optionalEnum, optionalInt, type Body } from './input.ts';
import { VIDEO_DEFECTS, type ImageSpec, type Layout, type Size, type VideoDefect } from './scenes.ts';

export interface Faults {
  /** Delay before answering each generation call. */
  latencyMs: number;
  /** The next N generation calls answer failStatus with a JSON error, counting down. */
  failNext: number;
  failStatus: number;
  /** Image answers hold this many images whatever was asked (null: as asked). */
  imageCount: number | null;
  /** Each image is a 2x2 collage of four clearly different colours. */
  collage: boolean;
  /** Each image is two different colours side by side. */
  split: boolean;
  /** Generation calls are not answered until the faults change or the client goes. */
  hang: boolean;
  /** Videos rendered while set carry this defect (scenes.ts VideoDefect); part of the render cache key. */
  videoDefect: VideoDefect | null;
}

export type FaultPatch = Partial<Faults> & { reset?: boolean };

export interface CallCounts { total: number; generation: number; byRoute: Record<string, number> }

export const NO_FAULTS: Readonly<Faults> = Object.freeze({
  latencyMs: 0, failNext: 0, failStatus: 500, imageCount: null, collage: false, split: false, hang: false, videoDefect: null,
});

const LIMITS = { latencyMs: 600_000, failNext: 1_000_000, imageCount: 16 } as const;
const PATCH_FIELDS = [...Object.keys(NO_FAULTS), 'reset'];

/** A patch from a control body or start options, checked field by field (422 on anything odd). */
export function parseFaultPatch(body: Body): FaultPatch {
  onlyFields(body, PATCH_FIELDS);
  const patch: FaultPatch = {
    latencyMs: optionalInt(body, 'latencyMs', 0, LIMITS.latencyMs),
    failNext: optionalInt(body, 'failNext', 0, LIMITS.failNext),
    failStatus: optionalInt(body, 'failStatus', 400, 599),
    collage: optionalBool(body, 'collage'),
    split: optionalBool(body, 'split'),
    hang: optionalBool(body, 'hang'),
    reset: optionalBool(body, 'reset'),
  };
  if (body.videoDefect === null) patch.videoDefect = null;
  else patch.videoDefect = optionalEnum(body, 'videoDefect', VIDEO_DEFECTS);
  if (body.imageCount === null) patch.imageCount = null;
  else patch.imageCount = optionalInt(body, 'imageCount', 0, LIMITS.imageCount);
  for (const key of Object.keys(patch) as Array<keyof FaultPatch>) if (patch[key] === undefined) delete patch[key];
  return patch;
}

export class FaultControl {
  private state: Readonly<Faults>;
  private readonly waiters = new Set<() => void>();
  private readonly byRoute = new Map<string, number>();
  private total = 0;
  private generation = 0;

  constructor(initial: Partial<Faults> = {}) {
    this.state = NO_FAULTS;
    this.set(initial);
  }

  get current(): Readonly<Faults> {
    return this.state;
  }

  /** True when a generation call can be answered at once (the common, fast case). */
  get quiet(): boolean {
    const s = this.state;
    return s.latencyMs === 0 && s.failNext === 0 && !s.hang;
  }

  /** Applies a patch (reset first, when asked: faults off and counters zero); wakes hung calls. */
  set(patch: FaultPatch): Readonly<Faults> {
    const { reset, ...changes } = parseFaultPatch(patch);
    if (reset) this.clearCounts();
    this.state = Object.freeze({ ...(reset ? NO_FAULTS : this.state), ...changes });
    for (const wake of [...this.waiters]) wake();
    return this.state;
  }

  reset(): void {
    this.set({ reset: true });
  }

  count(routeKey: string, generation: boolean): void {
    this.total++;
    if (generation) this.generation++;
    this.byRoute.set(routeKey, (this.byRoute.get(routeKey) ?? 0) + 1);
  }

  calls(): CallCounts {
    return { total: this.total, generation: this.generation, byRoute: Object.fromEntries(this.byRoute) };
  }

  /**
   * Holds a generation call while hang is on, then for latencyMs. False when the client went
   * away meanwhile (nothing to answer).
   */
  async admit(res: ServerResponse): Promise<boolean> {
    while (this.state.hang) {
      if (!(await this.nextChange(res))) return false;
    }
    return this.state.latencyMs > 0 ? this.delay(this.state.latencyMs, res) : !res.destroyed;
  }

  /** Waits `ms`, cut short when the client goes (a closing server must not wait for timers). */
  private async delay(ms: number, res: ServerResponse): Promise<boolean> {
    if (res.destroyed) return false;
    const gone = new AbortController();
    const onClose = () => gone.abort();
    res.once('close', onClose);
    try {
      await sleep(ms, undefined, { signal: gone.signal });
      return true;
    } catch {
      return false;
    } finally {
      res.off('close', onClose);
    }
  }

  /** The status this call must fail with (counting failNext down), or null. */
  takeFailure(): number | null {
    if (this.state.failNext <= 0) return null;
    this.state = Object.freeze({ ...this.state, failNext: this.state.failNext - 1 });
    return this.state.failStatus;
  }

  private nextChange(res: ServerResponse): Promise<boolean> {
    // A client that left before this call was held would never emit 'close' again.
    if (res.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const gone = () => {
        this.waiters.delete(wake);
        resolve(false);
      };
      const wake = () => {
        this.waiters.delete(wake);
        res.off('close', gone);
        resolve(true);
      };
      this.waiters.add(wake);
      res.once('close', gone);
    });
  }

  private clearCounts(): void {
    this.total = 0;
    this.generation = 0;
    this.byRoute.clear();
  }
}

/** The images an image request is answered with, as the faults shape them. */
export function imagePlan(faults: Readonly<Faults>, prompt: string, size: Size, requested: number): ImageSpec[] {
  const count = faults.imageCount ?? requested;
  const layout: Layout = faults.collage ? 'collage' : faults.split ? 'split' : 'single';
  return Array.from({ length: count }, (_, variant) => ({ kind: 'image', prompt, width: size.width, height: size.height, layout, variant }));
}

/** GET/POST /control: the model server's own admin route (never subject to faults). */
export function controlRoutes(control: FaultControl): Route[] {
  const view = () => ({ status: 200, json: { faults: control.current, calls: control.calls() } });
  return [
    { method: 'GET', pattern: '/control', handler: view },
    {
      method: 'POST',
      pattern: '/control',
      handler: async ({ req }) => {
        control.set(await readJson(req));
        return view();
      },
    },
  ];
}
