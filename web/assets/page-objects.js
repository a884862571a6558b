// @ts-check
// The pages that show one object, read-only: what the links in notifications, webhooks and work items
// open (the service builds them in src/kernel/links.ts from routes.js). /jobs/:jobId, /reviews/:reviewId,
// /tasks/:taskId, /deliveries/:deliveryId (and /delivery/:deliveryId, the path of older notifications),
// /production/shots/:shotId and /organizations/:organizationId/commercial. A link to an object of a
// project carries `?project=prj_...`: the page reads the object in that project for this request only
// (the Svc-Scope selector; the session's current scope does not change), else in the session's
// current project. Each page: an h1 naming the object, its status, a "Details" list with its id, and
// its related records; an object that does not exist or that the person cannot see says so in words.
import { api, ApiError, errorText, isAborted } from './api.js';
import { onLeave } from './app.js';
import { h, notice, section, when } from './dom.js';
import { routeOfLink } from './routes.js';

const ID = /^[A-Za-z0-9_.~-]{1,200}$/;

/** @typedef {Array<[string, string | number | Node | null | undefined]>} Facts */

/** A "Details" list: rows with an empty value are left out. @param {Facts} rows */
function details(rows) {
  const kept = rows.filter(([, v]) => v !== null && v !== undefined && v !== '');
  return h('dl', { class: 'facts' }, ...kept.map(([k, v]) => [h('dt', {}, k), h('dd', {}, /** @type {string | number | Node} */ (v))]));
}

/** @param {string | null | undefined} id */
const code = (id) => (id ? h('code', {}, id) : null);

/** @param {string} status */
const badge = (status) => h('span', { class: `badge status-${status}` }, status.replaceAll('_', ' '));

/** A link to another object page of the same project (kept in the same project scope). @param {string} path @param {string} text @param {string | null} project */
function objectLink(path, text, project) {
  return h('a', { href: project ? `${path}?${new URLSearchParams({ project })}` : path }, text);
}

/**
 * The frame every object page shares: reads `apiPath` (in the link's project when it names one) and
 * shows `view(object)`, or a clear message when the object is missing or out of reach.
 * @param {HTMLElement} root
 * @param {URL} url
 * @param {{ what: string, id: string, apiPath: string, scoped?: boolean,
 *   title: (o: any) => string, view: (o: any, project: string | null) => Node[] }} spec
 */
async function objectPage(root, url, spec) {
  const leave = new AbortController();
  onLeave(() => leave.abort());
  const asked = url.searchParams.get('project');
  const project = spec.scoped !== false && asked && ID.test(asked) ? asked : null;
  const heading = h('h1', {}, spec.what.charAt(0).toUpperCase() + spec.what.slice(1));
  const loading = h('p', { role: 'status' }, `Loading the ${spec.what}…`);
  root.replaceChildren(heading, loading);
  let o;
  try {
    o = await api('GET', spec.apiPath, undefined, { signal: leave.signal, scope: project ? `project=${project}` : undefined });
  } catch (err) {
    if (isAborted(err) || (err instanceof ApiError && err.status === 401)) return; // left, or api() went to /login
    loading.remove();
    const missing = err instanceof ApiError && (err.status === 404 || err.status === 403);
    heading.textContent = missing ? `${heading.textContent} not available` : heading.textContent;
    const why = err instanceof ApiError && err.status === 404
      ? `There is no ${spec.what} ${spec.id} ${project ? 'in its project' : 'in your current project'}, or it was removed.`
      : err instanceof ApiError && err.status === 403
        ? `You cannot see ${spec.what} ${spec.id}: ${errorText(err)}`
        : `The ${spec.what} could not be loaded: ${errorText(err)}`;
    root.append(notice('error', why), h('p', {}, h('a', { href: '/overview' }, 'Go to the overview')));
    return;
  }
  loading.remove();
  heading.textContent = spec.title(o);
  root.append(...spec.view(o, project), h('p', {}, h('a', { href: '/overview' }, 'Back to the overview')));
}

/**
 * @param {string} id
 * @param {string} title
 * @param {Node | Node[]} content
 */
function panel(id, title, content) {
  const s = section(id, title);
  s.body.append(...(Array.isArray(content) ? content : [content]));
  return s.element;
}

/** @param {any[]} items @param {(x: any) => import("./dom.js").Child} row @param {string} none */
function list(items, row, none) {
  return items.length ? h('ul', { class: 'record-list' }, ...items.map((x) => h('li', {}, row(x)))) : h('p', {}, none);
}

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function job(root, url, params) {
  const id = params.jobId;
  return objectPage(root, url, {
    what: 'generation job', id, apiPath: `/api/jobs/${encodeURIComponent(id)}`,
    title: (j) => `Generation job: ${j.kind}`,
    view: (j, project) => [
      h('p', { class: 'object-status' }, 'Status ', badge(j.status)),
      panel('job-details', 'Details', details([
        ['Job', code(j.id)], ['Kind', j.kind], ['Attempt', `${j.attempt} of ${j.maxAttempts}`],
        ['Connector', j.connector ? `${j.connector.label} (${j.connector.id})` : j.connectorId],
        ['Shot', j.shotId ? objectLink(`/production/shots/${encodeURIComponent(j.shotId)}`, j.shotId, project) : null],
        ['Priority', j.priority], ['Created', when(j.createdAt)], ['Finished', j.finishedAt ? when(j.finishedAt) : null],
        ['Error', j.error],
      ])),
      panel('job-attempts', 'Attempts', list(j.attempts ?? [], (a) => [
        `Attempt ${a.attempt}: `, a.outcome ? badge(a.outcome) : 'running', ' · ', when(a.startedAt),
        a.latencyMs != null ? ` · ${(a.latencyMs / 1000).toFixed(1)} s` : '', a.error ? h('span', { class: 'hint' }, ` · ${a.error}`) : null,
      ], 'No attempt yet.')),
    ],
  });
}

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function review(root, url, params) {
  const id = params.reviewId;
  return objectPage(root, url, {
    what: 'review', id, apiPath: `/api/production/reviews/${encodeURIComponent(id)}`,
    title: (r) => `Review: ${r.title}`,
    view: (r, project) => [
      h('p', { class: 'object-status' }, 'Status ', badge(r.status)),
      panel('review-details', 'Details', details([
        ['Review', code(r.id)], ['Of', `${r.targetKind === 'cut' ? 'an episode cut' : 'a shot'} (${r.artifactKind})`],
        ['Shot', r.shotId ? objectLink(`/production/shots/${encodeURIComponent(r.shotId)}`, r.shotId, project) : null],
        ['Artifact', code(r.artifactId)], ['SHA-256', code(r.artifactSha256)], ['Note', r.note],
        ['Requested', when(r.createdAt)], ['Re-opened', r.reopenCount ? `${r.reopenCount} time${r.reopenCount === 1 ? '' : 's'}` : null],
      ])),
      panel('review-decisions', 'Decisions', list(r.decisions ?? [], (d) => [
        badge(d.decision === 'approve' ? 'approved' : 'changes_requested'), ' · ', when(d.createdAt), d.note ? ` · ${d.note}` : '',
      ], 'No decision yet.')),
      panel('review-comments', 'Comments', list(r.comments ?? [], (c) => [
        c.body, h('span', { class: 'hint' }, ' · ', when(c.createdAt), c.onCurrentArtifact ? '' : ' · on an earlier version'),
      ], 'No comments.')),
    ],
  });
}

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function task(root, url, params) {
  const id = params.taskId;
  return objectPage(root, url, {
    what: 'task', id, apiPath: `/api/tasks/${encodeURIComponent(id)}`,
    title: (t) => `Task: ${t.title}`,
    view: (t) => {
      const linked = t.linkedPage && routeOfLink(t.linkedPage) ? h('a', { href: t.linkedPage }, t.linkedPage) : t.linkedPage;
      return [
        h('p', { class: 'object-status' }, 'Status ', badge(t.status)),
        panel('task-details', 'Details', details([
          ['Task', code(t.id)], ['Type', t.type], ['Priority', t.priority], ['Due', t.dueAt ? when(t.dueAt) : null],
          ['Description', t.description], ['About', linked], ['Created', when(t.createdAt)], ['Completed', t.completedAt ? when(t.completedAt) : null],
        ])),
        panel('task-history', 'History', list(t.history ?? [], (e) => [`${e.action.replace(/^task\./, '').replaceAll('_', ' ')} by ${e.actorName || 'the service'} · `, when(e.at)], 'No changes yet.')),
      ];
    },
  });
}

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function delivery(root, url, params) {
  const id = params.deliveryId;
  return objectPage(root, url, {
    what: 'delivery', id, apiPath: `/api/production/deliveries/${encodeURIComponent(id)}`,
    title: (d) => `Delivery: ${d.title}`,
    view: (d) => [
      h('p', { class: 'object-status' }, 'Status ', badge(d.status)),
      panel('delivery-details', 'Details', details([
        ['Delivery', code(d.id)], ['Version', d.version], ['Items', d.itemCount], ['Note', d.note],
        ['Created', when(d.createdAt)], ['Approved', d.approvedAt ? when(d.approvedAt) : null],
        ['Ready to approve', d.status === 'draft' ? (d.ready ? 'yes' : 'no') : null],
      ])),
      panel('delivery-items', 'Items', list(d.items ?? [], (i) => [
        h('strong', {}, i.fileName ?? i.artifactId), ` · ${i.kind ?? 'file'}`,
        i.durationMs != null ? ` · ${(i.durationMs / 1000).toFixed(1)} s` : '',
        ' · QA ', i.qa ? badge(i.qa.result) : 'not run', ' · review ', i.review ? badge(i.review.status) : 'none',
        i.gaps?.length ? h('span', { class: 'hint' }, ` · missing: ${i.gaps.join(', ').replaceAll('_', ' ')}`) : null,
      ], 'No items.')),
    ],
  });
}

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function shot(root, url, params) {
  const id = params.shotId;
  return objectPage(root, url, {
    what: 'shot', id, apiPath: `/api/production/shots/${encodeURIComponent(id)}`,
    title: (s) => `Shot: ${s.title}`,
    view: (s, project) => [
      h('p', { class: 'object-status' }, 'Status ', badge(s.status)),
      panel('shot-details', 'Details', details([
        ['Shot', code(s.id)], ['Position', s.position], ['Aspect ratio', s.aspectRatio],
        ['Duration target', s.durationTargetMs != null ? `${(s.durationTargetMs / 1000).toFixed(1)} s` : null],
        ['Description', s.description], ['Prompt', s.prompt],
      ])),
      panel('shot-jobs', 'Generation history', list(s.generationHistory ?? [], (j) => [
        objectLink(`/jobs/${encodeURIComponent(j.id)}`, `${j.kind} job ${j.id}`, project), ' ', badge(j.status), ' · ', when(j.createdAt),
      ], 'No generation jobs yet.')),
    ],
  });
}

/** @param {number} bytes */
const size = (bytes) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${bytes} bytes`);

/** @param {HTMLElement} root @param {URL} url @param {Record<string, string>} params */
export function commercial(root, url, params) {
  const id = params.organizationId;
  return objectPage(root, url, {
    what: 'usage and quota view', id, scoped: false, apiPath: `/api/organizations/${encodeURIComponent(id)}/commercial`,
    title: (c) => `Usage and quotas: ${c.organization.name}`,
    view: (c) => [
      panel('commercial-details', 'Plan and usage', details([
        ['Organization', code(c.organization.id)], ['Plan', c.account.planName],
        ['Clips this month', `${c.usageThisMonth.clips}${c.account.monthlyClipQuota != null ? ` of ${c.account.monthlyClipQuota}` : ''} (${c.usageThisMonth.month})`],
        ['Storage', `${size(c.usageThisMonth.storageBytes)}${c.account.storageGb != null ? ` of ${c.account.storageGb} GB` : ''}`],
        ['Seats', `${c.seats.reserved} of ${c.seats.limit} in use`], ['Estimated cost this month', `${c.usageThisMonth.estimatedCost} ${c.usageThisMonth.currency}`],
      ])),
      panel('commercial-warnings', 'Quota warnings', list(c.quotaWarnings ?? [], (w) => [
        `${w.metric === 'clips' ? 'Monthly clips' : 'Storage'}${w.workspaceId ? ` of workspace ${w.workspaceId}` : ''}: ${w.threshold} % reached (${w.used} of ${w.quota}) · `, when(w.at),
      ], 'No quota warnings.')),
    ],
  });
}
