// @ts-check
// The overview's live sections: "Jobs" (the project's newest generation jobs; refreshed by the page's
// poller), "Notifications (N unread)" (the user's inbox in the organization) and "Work items" (the
// caller's to-do list). A notification's subject and a work item's title link to the console page
// of its object. Each rebuilds its list only when the data changed, so a refresh never takes
// the keyboard focus away; job status changes are announced in a polite status line.
import { api, ApiError, errorText, holds, isAborted } from './api.js';
import { h, clear, notice, section, when } from './dom.js';
import { routeOfLink } from './routes.js';

/**
 * The text as a link to the console page `link` opens (a notification's or work item's), or plain
 * text when the link is empty or opens no console page.
 * @param {string | null | undefined} link
 * @param {string} text
 */
function linked(link, text) {
  return link && routeOfLink(link) ? h('a', { href: link }, text) : text;
}

/** @param {HTMLElement} body @param {string} text */
function say(body, text) { clear(body); body.append(h('p', {}, text)); }

/**
 * Each section's `signal` is the page's: aborted when the page is left (no request after that).
 * @param {{ project: object | null, permissions: string[] }} context
 * @param {{ shotTitle: (id: string) => string | undefined, onCompleted: (job: any) => void, signal: AbortSignal }} opts
 */
export function jobsSection(context, opts) {
  const { signal } = opts;
  const { element, body } = section('overview-jobs', 'Jobs', { cls: 'jobs' });
  const live = h('p', { role: 'status', class: 'hint' });
  const rows = h('ul', { class: 'job-list' });
  const empty = h('p', {}, 'No generation jobs yet.');
  const more = h('p', { class: 'hint' });
  const list = h('div', {}, h('p', {}, 'Loading jobs…'));
  const enabled = Boolean(context.project) && holds(context.permissions, ['job:create', 'queue:manage']);
  if (!context.project) say(body, 'Choose a project to see its jobs.');
  else if (!enabled) say(body, 'Your role in this project cannot see generation jobs.');
  else body.append(h('p', { class: 'hint' }, 'Statuses refresh every 2 seconds while this page is visible.'), list, live);

  let lastKey = '';
  /** @type {Map<string, string> | null} */
  let statuses = null;

  /** @param {any} job */
  const label = (job) => {
    const shot = job.shotId ? opts.shotTitle(job.shotId) : undefined;
    return `${job.kind} job${shot ? ` for ${shot}` : ''}`;
  };

  /** @param {any} job */
  const row = (job) => h('li', { class: 'job', 'data-status': job.status },
    h('span', { class: 'job-title' }, label(job)), ' ',
    h('span', { class: `badge status-${job.status}` }, job.status),
    h('span', { class: 'hint' }, ` · attempt ${job.attempt} of ${job.maxAttempts} · `, when(job.updatedAt)),
    job.error && job.status !== 'completed' ? h('span', { class: 'hint job-error' }, ` · ${job.error}`) : null);

  /** Fetch and show; false when polling should stop (no access, signed out). */
  async function refresh() {
    if (!enabled) return false;
    try {
      const res = await api('GET', '/api/jobs?pageSize=20', undefined, { signal });
      /** @type {any[]} */
      const jobs = res.items;
      const key = JSON.stringify(jobs.map((j) => [j.id, j.status, j.attempt, j.updatedAt, j.error]));
      const changes = [];
      const next = new Map(jobs.map((j) => [j.id, j.status]));
      if (statuses) {
        for (const j of jobs) {
          const before = statuses.get(j.id);
          if (before !== j.status) {
            changes.push(before ? `${label(j)} is now ${j.status}` : `new ${label(j)}: ${j.status}`);
            if (j.status === 'completed' && j.shotId) opts.onCompleted(j);
          }
        }
      }
      statuses = next;
      if (changes.length) live.textContent = changes.join('; ');
      if (key !== lastKey) {
        lastKey = key;
        rows.replaceChildren(...jobs.map(row));
        more.textContent = res.pagination.total > jobs.length ? `${res.pagination.total - jobs.length} older jobs not shown.` : '';
        list.replaceChildren(...(jobs.length ? [rows, more] : [empty]));
      }
      return true;
    } catch (err) {
      if (isAborted(err)) return false;
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
        if (err.status === 403) say(body, 'Your role in this project cannot see generation jobs.');
        return false;
      }
      live.textContent = `Job statuses could not be refreshed: ${errorText(err)}`;
      return true;
    }
  }

  return { element, refresh, enabled };
}

/** @param {{ organization: object | null }} context @param {AbortSignal} signal */
export function notificationsSection(context, signal) {
  const { element, heading, body } = section('overview-notifications', 'Notifications', { cls: 'notifications' });
  const list = h('ul', { class: 'notification-list' });
  const actions = h('div', { class: 'actions' });
  /** Where a failed refresh says so (the list stays; the next good refresh clears it). */
  const problem = h('div', { class: 'notification-problem' });
  const enabled = Boolean(context.organization);
  if (!enabled) say(body, 'No organization in scope.');
  else body.append(problem, actions, list);
  let lastKey = '';

  /** @param {() => Promise<unknown>} action */
  const act = async (action) => {
    try {
      await action();
      await refresh();
      heading.focus();
    } catch (err) {
      if (!(isAborted(err) || (err instanceof ApiError && err.status === 401))) body.prepend(notice('error', errorText(err)));
    }
  };

  /** @param {any} n */
  const item = (n) => h('li', { class: n.read ? 'notification read' : 'notification unread' },
    h('p', { class: 'notification-subject' }, n.read ? null : [h('span', { class: 'badge' }, 'Unread'), ' '], h('strong', {}, linked(n.link, n.subject))),
    ...(n.body ? [h('p', {}, n.body)] : []),
    h('p', { class: 'hint' }, `${n.category.replaceAll('_', ' ')} · `, when(n.createdAt)),
    ...(n.read ? [] : [h('button', {
      type: 'button', class: 'secondary', 'aria-label': `Mark read: ${n.subject}`,
      onclick: () => act(() => api('PATCH', `/api/notifications/${encodeURIComponent(n.id)}`, { read: true }, { signal })),
    }, 'Mark read')]));

  /** Fetch and show; false when polling should stop (no access, signed out). A failure otherwise is shown and retried like the jobs. */
  async function refresh() {
    if (!enabled) return false;
    try {
      const res = await api('GET', '/api/notifications?limit=20', undefined, { signal });
      problem.replaceChildren();
      heading.textContent = `Notifications (${res.unreadCount} unread)`;
      const key = JSON.stringify([res.unreadCount, res.pagination.total, res.items.map((/** @type {any} */ n) => [n.id, n.read])]);
      if (key === lastKey) return true;
      lastKey = key;
      actions.replaceChildren(...(res.unreadCount > 0
        ? [h('button', { type: 'button', onclick: () => act(() => api('POST', '/api/notifications/read-all', undefined, { signal })) }, 'Mark all read')]
        : []));
      list.replaceChildren(...(res.items.length ? res.items.map(item) : [h('li', {}, 'No notifications.')]));
      if (res.pagination.total > res.items.length) list.append(h('li', { class: 'hint' }, `${res.pagination.total - res.items.length} older notifications not shown.`));
      return true;
    } catch (err) {
      if (isAborted(err)) return false;
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
        if (err.status === 403) say(body, 'Your role cannot see notifications here.');
        return false;
      }
      const text = `Notifications could not be ${lastKey ? 'refreshed' : 'loaded'}: ${errorText(err)}`;
      if (problem.textContent !== text) problem.replaceChildren(notice('error', text)); // announced once, not on every retry
      return true;
    }
  }

  return { element, refresh };
}

const KIND_LABELS = /** @type {Record<string, string>} */ ({ task: 'Task', failed_job: 'Failed job', shot_without_media: 'Shot to generate' });

/** @param {{ project: object | null, permissions: string[] }} context @param {AbortSignal} signal */
export function workItemsSection(context, signal) {
  const { element, body } = section('overview-work-items', 'Work items', { cls: 'work-items' });

  async function load() {
    if (!context.project) return say(body, 'Choose a project to see your work items.');
    if (!holds(context.permissions, ['script:read', 'task:view'])) return say(body, 'Your role in this project has no work items.');
    try {
      const res = await api('GET', '/api/work-items?pageSize=50', undefined, { signal });
      clear(body);
      if (!res.items.length) return say(body, 'Nothing to do.');
      body.append(h('ul', { class: 'work-items' }, ...res.items.map((/** @type {any} */ w) => h('li', { class: `work-item priority-${w.priority}` },
        h('span', { class: 'badge' }, KIND_LABELS[w.kind] ?? w.kind), ' ',
        h('span', { class: 'work-item-title' }, linked(w.link, w.title)),
        h('span', { class: 'hint' }, ` · ${w.priority} priority · ${w.status}`, w.dueAt ? [' · due ', when(w.dueAt)] : null)))));
      if (res.pagination.total > res.items.length) body.append(h('p', { class: 'hint' }, `${res.pagination.total - res.items.length} more not shown.`));
    } catch (err) {
      if (isAborted(err) || (err instanceof ApiError && err.status === 401)) return;
      clear(body);
      body.append(notice('error', `Work items could not be loaded: ${errorText(err)}`));
    }
  }

  return { element, load };
}
