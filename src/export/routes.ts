import type { Router } from '../http/router.ts';

// Scaffold: the routes are written by the export work of issue 9.
export function bindExportRoutes(_r: Router): void {}
