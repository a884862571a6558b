// @ts-check
// /overview: the production overview of the session's current scope. A scope switcher (selects
// "Organization", "Workspace", "Project"; PATCH /api/context), then the sections "Catalog" (episodes
// and shots with their newest video's real first and last frames), "Jobs" (polled every 2 s while the
// page is visible), "Notifications (N unread)" and "Work items". Switching scope stops the sections
// below the switcher, then reloads them only, so keyboard focus stays on the select.
import { api, ApiError, errorText, isAborted } from './api.js';
import { h, clear, notice } from './dom.js';
import { onLeave } from './app.js';
import { describe, scopeSwitcher } from './overview-scope.js';
import { catalogSection } from './overview-catalog.js';
import { jobsSection, notificationsSection, workItemsSection } from './overview-feeds.js';

const POLL_MS = 2000;
/** Notifications refresh on every n-th job poll. */
const NOTIFICATIONS_EVERY = 5;

/**
 * Run `tick` every POLL_MS while `anchor` is in the document and the page is visible; a hidden page
 * stops polling and a visible one resumes at once. `tick` answers false to stop for good.
 * @param {HTMLElement} anchor
 * @param {(n: number) => Promise<boolean>} tick
 * @returns {() => void} stop
 */
export function poll(anchor, tick) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let running = false;
  let stopped = false;
  let n = 0;
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  };
  const run = async () => {
    timer = undefined;
    if (stopped) return;
    if (!anchor.isConnected) return stop();
    if (document.visibilityState !== 'visible') return; // onVisibility resumes
    running = true;
    let keep;
    try { keep = await tick(n++); } catch { keep = true; } finally { running = false; }
    if (!keep) return stop();
    if (!stopped && timer === undefined && document.visibilityState === 'visible') timer = setTimeout(run, POLL_MS);
  };
  function onVisibility() {
    if (stopped) return;
    if (!anchor.isConnected) return stop();
    if (document.visibilityState === 'visible') {
      if (!running && timer === undefined) void run(); // run() catches what tick() throws
    } else {
      clearTimeout(timer);
      timer = undefined;
    }
  }
  document.addEventListener('visibilitychange', onVisibility);
  timer = setTimeout(run, POLL_MS);
  return stop;
}

/**
 * Leaving the page (even during its first load) aborts its requests: none is sent after that and
 * none can navigate from the next page (api() with the page's signal), and nothing continues after
 * an await once the page is gone.
 * @param {HTMLElement} root
 * @param {URL} _url
 */
export async function render(root, _url) {
  const leave = new AbortController();
  const { signal } = leave;
  let stopPolling = () => {};
  onLeave(() => { leave.abort(); stopPolling(); });
  const gone = () => signal.aborted || !root.isConnected;
  clear(root);
  const status = h('p', { role: 'status', class: 'hint' });
  const content = h('div', { class: 'overview-content' });
  root.append(h('h1', {}, 'Overview'), status);

  /** @type {any} */
  let context;
  try {
    context = await api('GET', '/api/context', undefined, { signal });
  } catch (err) {
    if (gone() || isAborted(err) || (err instanceof ApiError && err.status === 401)) return; // left, or api() went to /login
    root.append(notice('error', `The current scope could not be loaded: ${errorText(err)}`));
    return;
  }
  if (gone()) return;

  // The sections shown work in the session's current scope, which their requests do not name (a
  // frame's <img> cannot): before the scope moves, they stop (hide), or the service would answer them
  // in the next scope (a 404 for a frame of the previous project).
  let view = new AbortController();
  const hide = () => {
    stopPolling();
    view.abort();
    for (const img of content.querySelectorAll('img')) img.removeAttribute('src');
  };

  /** @param {any} ctx */
  const show = (ctx) => {
    hide();
    if (gone()) return;
    view = new AbortController();
    const sections = AbortSignal.any([signal, view.signal]);
    const hidden = () => gone() || sections.aborted;
    const catalog = catalogSection(ctx, sections);
    const jobs = jobsSection(ctx, { shotTitle: catalog.shotTitle, onCompleted: (job) => { void catalog.refreshShot(job.shotId); }, signal: sections });
    const notifications = notificationsSection(ctx, sections);
    const workItems = workItemsSection(ctx, sections);
    content.replaceChildren(catalog.element, jobs.element, notifications.element, workItems.element);
    const anchor = jobs.element;
    let jobsOn = jobs.enabled;
    let notificationsOn = true;
    // The first job list waits for the catalog, so that jobs are named by their shots' titles.
    // (Each load and refresh catches its own errors and shows them in its section.)
    void Promise.all([catalog.load().then(() => (hidden() ? false : jobs.refresh())).then((on) => { jobsOn = on; }),
      notifications.refresh().then((on) => { notificationsOn = on; }), workItems.load()]).then(() => {
      if (hidden() || !anchor.isConnected || (!jobsOn && !notificationsOn)) return;
      stopPolling = poll(anchor, async (n) => {
        const [j, m] = await Promise.all([
          jobsOn ? jobs.refresh() : false,
          notificationsOn && (n + 1) % NOTIFICATIONS_EVERY === 0 ? notifications.refresh() : notificationsOn,
        ]);
        jobsOn = j;
        notificationsOn = m;
        return !hidden() && (jobsOn || notificationsOn);
      });
    });
  };

  const switcher = scopeSwitcher(context, {
    announce: (text) => { status.textContent = text; },
    onSwitch: hide,
    onChange: (ctx) => show(ctx),
    signal,
  });
  root.append(switcher.element, content);
  show(context);
  try {
    await switcher.ready;
  } catch (err) {
    if (gone() || isAborted(err)) return;
    if (!(err instanceof ApiError && err.status === 401)) status.textContent = `The scope lists could not be loaded: ${errorText(err)}`;
  }
  if (gone()) return;
  if (!context.project) status.textContent = `Showing ${describe(context)}`;
}
