import type { Router } from '../http/router.ts';

// Scaffold: the routes are written by the review work of issue 9.
export function bindReviewRoutes(_r: Router): void {}
