// Every link the service writes for a person (notifications in the inbox and on webhooks, work items,
// the invitation's acceptUrl) is built here, from the console's route table (web/assets/routes.js),
// so that each one opens a console page that shows its object. A link to an object of a project
// carries the project (`?project=prj_...`): the page reads the object in that project (the Svc-Scope
// selector, for that request only), whatever project the session is in. Without it (links written by
// earlier versions) the page reads in the session's current project.
import { consolePath, routeOfLink } from '../../web/assets/routes.js';

/** The console pages that show one object, and the route pattern of each. */
export const OBJECT_PAGES = {
  job: '/jobs/:jobId',
  review: '/reviews/:reviewId',
  task: '/tasks/:taskId',
  delivery: '/deliveries/:deliveryId',
  shot: '/production/shots/:shotId',
  commercial: '/organizations/:organizationId/commercial',
} as const;
export type ObjectPage = keyof typeof OBJECT_PAGES;

const inProject = (page: 'job' | 'review' | 'task' | 'delivery' | 'shot', key: string) =>
  (o: { id: string; projectId: string }) => consolePath(OBJECT_PAGES[page], { [key]: o.id }, { project: o.projectId });

/** The console link of each object page. */
export const consoleLinks = {
  job: inProject('job', 'jobId'),
  review: inProject('review', 'reviewId'),
  task: inProject('task', 'taskId'),
  delivery: inProject('delivery', 'deliveryId'),
  shot: inProject('shot', 'shotId'),
  commercial: (o: { organizationId: string }) => consolePath(OBJECT_PAGES.commercial, { organizationId: o.organizationId }),
} satisfies Record<ObjectPage, (o: never) => string>;

/** The invitation page of an invite token (the path of acceptUrl). */
export const invitationPath = (token: string): string => consolePath('/invitations/accept', {}, { token });

/** The console page a link opens (its route's name), or null when it is not a plain path of a console page. */
export const pageOfLink = (link: string): string | null => routeOfLink(link)?.name ?? null;
