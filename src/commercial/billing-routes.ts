// Commercial operations routes (filled in by the commercial issue).
import type { Router } from '../http/router.ts';

export function bindBillingRoutes(_r: Router): void {}
