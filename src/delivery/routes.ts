import type { Router } from '../http/router.ts';

// Scaffold: the routes are written by the delivery work of issue 9.
export function bindDeliveryRoutes(_r: Router): void {}
