// @ts-check
// The overview's scope switcher: three selects ("Organization", "Workspace", "Project") that move the
// session's current scope with PATCH /api/context. The form stays in place while the content below is
// reloaded, so focus stays on the select a keyboard user is working with; a change that is overtaken
// by a newer one is dropped (last change wins).
import { api, errorText, isAborted, listAll } from './api.js';
import { h } from './dom.js';

/**
 * @typedef {{ id: string, name: string, status?: string }} Named
 * @typedef {{ organization: Named | null, workspace: Named | null, project: Named | null, permissions: string[] }} Context
 */

const LEVELS = /** @type {const} */ (['organization', 'workspace', 'project']);
/** @type {Record<typeof LEVELS[number], string>} */
const LABELS = { organization: 'Organization', workspace: 'Workspace', project: 'Project' };
/** @type {Record<typeof LEVELS[number], string>} */
const BODY_KEYS = { organization: 'organizationId', workspace: 'workspaceId', project: 'projectId' };

/**
 * The options of the three selects for a context: every organization of the caller, the
 * workspaces of the current organization, the projects of the current workspace.
 * @param {Context} context
 * @param {AbortSignal | undefined} signal
 */
async function optionsFor(context, signal) {
  const [organizations, workspaces, projects] = await Promise.all([
    listAll('/api/organizations', { signal }),
    context.organization ? listAll(`/api/organizations/${encodeURIComponent(context.organization.id)}/workspaces`, { signal }) : Promise.resolve([]),
    context.workspace ? listAll(`/api/workspaces/${encodeURIComponent(context.workspace.id)}/projects`, { signal }) : Promise.resolve([]),
  ]);
  return { organization: organizations, workspace: workspaces, project: projects };
}

/** @param {Named} item */
const optionText = (item) => (item.status === 'archived' ? `${item.name} (archived)` : item.name);

/**
 * @param {HTMLSelectElement} select
 * @param {Named[]} items
 * @param {Named | null} current
 */
function fill(select, items, current) {
  select.replaceChildren();
  const list = current && !items.some((i) => i.id === current.id) ? [current, ...items] : items;
  if (list.length === 0) select.append(h('option', { value: '' }, 'None'));
  for (const item of list) select.append(h('option', { value: item.id }, optionText(item)));
  select.value = current ? current.id : '';
  select.disabled = list.length === 0;
}

/**
 * The switcher. `onSwitch()` runs before the scope is asked to move: what works in the current scope
 * stops (its requests would be answered in the next one). `onChange(context)` runs after the scope
 * moved (and once the options are filled), or after a change failed, with the scope the session has.
 * `signal`: the page's (aborted when the page is left).
 * @param {Context} initial
 * @param {{ onSwitch: () => void, onChange: (context: Context) => void, announce: (text: string) => void, signal?: AbortSignal }} opts
 * @returns {{ element: HTMLElement, ready: Promise<void> }}
 */
export function scopeSwitcher(initial, opts) {
  /** @type {Record<string, HTMLSelectElement>} */
  const selects = {};
  const rows = LEVELS.map((level) => {
    const id = `scope-${level}`;
    const select = /** @type {HTMLSelectElement} */ (h('select', { id, name: level }));
    selects[level] = select;
    return h('div', { class: 'field' }, h('label', { for: id, class: 'field-label' }, LABELS[level]), select);
  });
  const form = h('form', { class: 'grid three scope-switcher', 'aria-label': 'Scope' }, ...rows);
  form.addEventListener('submit', (e) => e.preventDefault());

  // Two counters: `shows` drops an options fill overtaken by a newer one; `changes` drops a change
  // overtaken by a newer change (and lets only the newest change clear aria-busy). Sharing one counter
  // made every change look overtaken by its own show(), so aria-busy was never cleared.
  let shows = 0;
  let changes = 0;
  /** @param {Context} context */
  const show = async (context) => {
    const mine = ++shows;
    const options = await optionsFor(context, opts.signal);
    if (mine !== shows) return false;
    for (const level of LEVELS) fill(selects[level], options[level], context[level]);
    return true;
  };

  for (const level of LEVELS) {
    selects[level].addEventListener('change', () => void (async () => { // the handler catches its own errors
      const value = selects[level].value;
      if (!value) return;
      const mine = ++changes;
      for (const l of LEVELS) selects[l].setAttribute('aria-busy', 'true');
      opts.onSwitch();
      try {
        /** @type {Context} */
        const context = await api('PATCH', '/api/context', { [BODY_KEYS[level]]: value }, { signal: opts.signal });
        if (mine !== changes) return;
        if (await show(context) && mine === changes) {
          opts.announce(`Showing ${describe(context)}`);
          opts.onChange(context);
        }
      } catch (err) {
        if (mine !== changes || isAborted(err)) return;
        opts.announce(`Could not switch: ${errorText(err)}`);
        // Put the selects, and what onSwitch stopped, back to the scope the session really has.
        try {
          const context = await api('GET', '/api/context', undefined, { signal: opts.signal });
          if (await show(context) && mine === changes) opts.onChange(context);
        } catch { /* the page shows the next error */ }
      } finally {
        if (mine === changes) for (const l of LEVELS) selects[l].removeAttribute('aria-busy');
      }
    })());
  }

  return { element: form, ready: show(initial).then(() => undefined) };
}

/** @param {Context} c */
export function describe(c) {
  return [c.organization?.name, c.workspace?.name, c.project?.name].filter(Boolean).join(' / ') || 'no scope';
}
