// @ts-check
// /sso/complete: the landing page of single sign-on. The provider's callback sent the browser here
// with a one-time ticket in the fragment (#ticket=..., never sent to a server); it is removed from
// the address at once and redeemed for a cookie session (POST /api/auth/sso/redeem, kind browser),
// then the console continues to returnTo (or the MFA code step, or MFA enrollment).
import { api } from './api.js';
import { h, notice } from './dom.js';
import { continueSignIn, safeReturnTo, signInError } from './page-login.js';

/**
 * @param {HTMLElement} root
 * @param {URL} url
 */
export async function render(root, url) {
  const ticket = new URLSearchParams(url.hash.replace(/^#/, '')).get('ticket');
  // The ticket leaves the address bar and the history entry before anything else happens.
  if (url.hash) history.replaceState(null, '', url.pathname + url.search);
  const heading = h('h1', {}, 'Signing you in');
  const card = h('div', { class: 'narrow card' }, heading);
  root.replaceChildren(card);
  if (!ticket) {
    heading.textContent = 'Single sign-on';
    card.append(notice('error', 'This page needs the sign-in link from your identity provider. Sign in again.'),
      h('p', {}, h('a', { href: '/login' }, 'Go to sign in')));
    return;
  }
  const waiting = h('p', { role: 'status' }, 'Completing single sign-on…');
  card.append(waiting);
  try {
    const answer = await api('POST', '/api/auth/sso/redeem', { ticket, kind: 'browser' });
    continueSignIn(root, answer, safeReturnTo(answer?.returnTo));
  } catch (err) {
    heading.textContent = 'Single sign-on failed';
    waiting.remove();
    card.append(notice('error', signInError(err)), h('p', {}, h('a', { href: '/login' }, 'Sign in again')));
  }
}
