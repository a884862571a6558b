// @ts-check
// The security page's "Sessions" section: the signed-in person's own live sessions (GET
// /api/auth/sessions), the current one first and marked "This device"; "Sign out" on each other one
// (DELETE /api/auth/sessions/<id>) and "Sign out other sessions" (POST /api/auth/sessions/revoke-others).
import { api, errorText } from './api.js';
import { h, busy, section, when } from './dom.js';

/** @returns {{ element: HTMLElement, refresh: () => Promise<void> }} */
export function sessionsSection() {
  const s = section('sessions', 'Sessions');
  const list = h('ul', { class: 'plain session-list' });
  const others = h('button', { type: 'button', class: 'secondary', onclick: () => revokeOthers() }, 'Sign out other sessions');
  s.body.append(
    h('p', { class: 'hint' }, 'Where you are signed in. Sign out anywhere you do not recognise.'),
    list,
    h('div', { class: 'actions' }, others),
  );

  async function refresh() {
    let answer;
    try {
      answer = await api('GET', '/api/auth/sessions');
    } catch (err) {
      s.say('error', errorText(err));
      return;
    }
    /** @type {any[]} */
    const items = [...(answer?.items ?? [])].sort((a, b) => (a.current === b.current ? String(b.lastSeenAt).localeCompare(String(a.lastSeenAt)) : a.current ? -1 : 1));
    list.replaceChildren(...items.map((x) => sessionItem(x)));
  }

  /** @param {any} x */
  function sessionItem(x) {
    const descId = `session-${x.id}`;
    const item = h('li', { class: 'session' },
      h('div', { id: descId },
        h('strong', {}, describeAgent(x.userAgent, x.kind)),
        x.current ? [' ', h('span', { class: 'badge' }, 'This device')] : null,
        h('br'),
        h('span', { class: 'hint' },
          x.ip ? `${x.ip} · ` : '', 'signed in ', when(x.createdAt), ' · last active ', when(x.lastSeenAt))));
    if (!x.current) {
      item.append(h('button', {
        type: 'button', class: 'secondary', 'aria-describedby': descId,
        onclick: () => busy(item, async () => {
          try {
            await api('DELETE', `/api/auth/sessions/${encodeURIComponent(x.id)}`);
            await refresh();
            s.say('status', 'That session is signed out.');
            others.focus();
          } catch (err) {
            s.say('error', errorText(err));
          }
        }),
      }, 'Sign out'));
    }
    return item;
  }

  async function revokeOthers() {
    await busy(s.element, async () => {
      try {
        const r = await api('POST', '/api/auth/sessions/revoke-others');
        const n = Number(r?.revoked ?? 0);
        await refresh();
        s.say('status', n === 0 ? 'There were no other sessions.' : `Signed out ${n} other ${n === 1 ? 'session' : 'sessions'}.`);
      } catch (err) {
        s.say('error', errorText(err));
      }
    });
  }

  return { element: s.element, refresh };
}

/**
 * "Chrome on Linux", "API client", or the user agent itself when it is not recognised.
 * @param {string | null | undefined} ua
 * @param {string} kind
 */
export function describeAgent(ua, kind) {
  if (!ua) return kind === 'browser' ? 'A browser' : 'An API client';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /(Chrome|Chromium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : null;
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Windows/.test(ua) ? 'Windows'
    : /Mac OS X|Macintosh/.test(ua) ? 'macOS' : /Linux|X11/.test(ua) ? 'Linux' : null;
  if (browser) return os ? `${browser} on ${os}` : browser;
  return ua.length > 60 ? `${ua.slice(0, 57)}…` : ua;
}
