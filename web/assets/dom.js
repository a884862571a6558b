// @ts-check
// Building the DOM without markup strings: every element by document.createElement, every piece of
// text as a text node, so that nothing the service answers can ever become markup.

/**
 * @typedef {string | number | Node | null | undefined | false | ReadonlyArray<unknown>} Child
 * Strings and numbers become text nodes; null, undefined and false are skipped; arrays are flattened.
 */

/**
 * An element. `attrs`: plain attributes (string values; `true` sets an empty attribute; null,
 * undefined and false leave it out), `class`, and `on<event>` functions as listeners
 * (`onclick`, `onsubmit`, `oninput`, ...). Never use it to set `style` (the CSP forbids inline styles).
 * @template {string} K
 * @param {K} tag
 * @param {Record<string, unknown> | null} [attrs]
 * @param {...Child} children
 * @returns {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement}
 */
export function h(tag, attrs, ...children) {
  const el = /** @type {any} */ (document.createElement(tag));
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), /** @type {EventListener} */ (value));
    } else if (key === 'class') {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- class is a string or a list of strings (see h())
      el.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : String(value);
    } else {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- attribute values are strings or numbers (see h())
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {ReadonlyArray<unknown>} children
 */
function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.append(c);
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- here a string or a number (see Child)
    else el.append(document.createTextNode(String(c)));
  }
}

/**
 * Removes every child of `el`; returns it.
 * @template {Element} E
 * @param {E} el
 * @returns {E}
 */
export function clear(el) {
  el.replaceChildren();
  return el;
}

/**
 * A labelled form control: `<label class="field"><span>text</span><input ...></label>`; the
 * accessible name of the control is the label text. `inputAttrs` are the input's attributes (as for
 * h(); default type "text"), or an element (a `<select>`, `<textarea>`) to wrap instead. The control
 * is `label.control` (or `label.querySelector('input')`).
 * @param {string} labelText
 * @param {Record<string, unknown> | HTMLElement} [inputAttrs]
 * @returns {HTMLLabelElement}
 */
export function field(labelText, inputAttrs = {}) {
  const control = inputAttrs instanceof HTMLElement ? inputAttrs : h('input', { type: 'text', ...inputAttrs });
  return h('label', { class: 'field' }, h('span', { class: 'field-label' }, labelText), control);
}

/**
 * A message: kind "error" is announced at once (role=alert); any other kind ("status", "info",
 * "success") politely (role=status).
 * @param {string} kind
 * @param {string} text
 * @returns {HTMLParagraphElement}
 */
export function notice(kind, text) {
  return h('p', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/**
 * A panel section: `<section class="panel <cls>" id=<id>>` with an h2 (`<id>-heading`, focusable by
 * script), a messages area (`say(kind, text)` replaces its message, `quiet()` clears it) and a body.
 * `named` (default true): the heading names the section (a "region" landmark); leave it false when
 * the title would clash with a field's label on the same page.
 * @param {string} id
 * @param {string} title
 * @param {{ cls?: string, named?: boolean }} [opts]
 */
export function section(id, title, opts = {}) {
  const { cls = '', named = true } = opts;
  const heading = h('h2', { id: `${id}-heading`, tabindex: '-1' }, title);
  const messages = h('div', { class: 'section-messages' });
  const body = h('div', { class: 'section-body' });
  const element = h('section', { class: ['panel', cls], id, 'aria-labelledby': named ? `${id}-heading` : null }, heading, messages, body);
  /** @param {string} kind @param {string} text */
  const say = (kind, text) => messages.replaceChildren(notice(kind, text));
  const quiet = () => messages.replaceChildren();
  return { element, heading, messages, body, say, quiet };
}

/**
 * Runs `work` with every button in `container` disabled and the container marked aria-busy (no
 * double submits); afterwards re-enables only the buttons it disabled. Answers what `work` answers.
 * @template T
 * @param {Element} container
 * @param {() => Promise<T>} work
 * @returns {Promise<T>}
 */
export async function busy(container, work) {
  const buttons = [...container.querySelectorAll('button')].filter((b) => !b.disabled);
  for (const b of buttons) b.disabled = true;
  container.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    for (const b of buttons) b.disabled = false;
    container.removeAttribute('aria-busy');
  }
}

/**
 * A `<time>` with a local date and time (only the time when it is today); empty text for no date.
 * @param {string | null | undefined} iso
 * @returns {HTMLElement}
 */
export function when(iso) {
  const d = new Date(iso ?? '');
  if (!iso || Number.isNaN(d.getTime())) return h('span', {}, String(iso ?? ''));
  const today = d.toDateString() === new Date().toDateString();
  return h('time', { datetime: d.toISOString() },
    today ? d.toLocaleTimeString(undefined, { timeStyle: 'short' }) : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }));
}
