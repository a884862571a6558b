// @ts-check
// /login: e-mail and password, then (TOTP on) the "Authentication code" step; the sign-in providers
// as "Sign in with <name>" links to /api/auth/sso/start. The session is the HttpOnly cookie the
// service sets for a same-origin login (the Origin header makes it a browser login); the token in
// the answer is never kept.
import { api, ApiError, errorText } from './api.js';
import { navigate } from './app.js';
import { h, busy, field, notice } from './dom.js';
import { startEnrollment } from './page-enroll.js';

/**
 * The returnTo of a console URL when it is a plain relative path of this console, else /overview
 * (never /login or the landing page again).
 * @param {string | null | undefined} raw
 * @returns {string}
 */
export function safeReturnTo(raw) {
  // eslint-disable-next-line no-control-regex -- it refuses control characters on purpose
  if (!raw || raw.length > 2000 || !raw.startsWith('/') || raw.startsWith('//') || /[\\\s\u0000-\u001f\u007f]/.test(raw)) return '/overview';
  const url = new URL(raw, location.origin);
  if (url.origin !== location.origin || ['/', '/login', '/sso/complete', '/mfa/enroll'].includes(url.pathname)) return '/overview';
  return url.pathname + url.search;
}

/** Person-readable messages for the sign-in codes (else the service's message). */
const MESSAGES = /** @type {Record<string, string>} */ ({
  invalid_credentials: 'The e-mail address or password is wrong.',
  account_suspended: 'This account is suspended. Contact your administrator.',
  mfa_code_invalid: 'That code is not right. Check your authenticator app and try again.',
  mfa_challenge_locked: 'Too many wrong codes. Sign in again.',
  mfa_challenge_expired: 'The sign-in took too long. Sign in again.',
  mfa_challenge_invalid: 'This sign-in is no longer valid. Sign in again.',
  invalid_ticket: 'The single sign-on link is used or expired. Sign in again.',
});

/**
 * @param {unknown} err
 * @returns {string}
 */
export function signInError(err) {
  if (err instanceof ApiError) {
    if (err.code === 'rate_limited') {
      const s = Number(err.details?.retryAfterSeconds);
      return `Too many attempts. Try again in ${Number.isFinite(s) ? s : 'a few'} seconds.`;
    }
    const left = Number(err.details?.attemptsLeft);
    if (err.code === 'mfa_code_invalid' && Number.isFinite(left)) return `${MESSAGES.mfa_code_invalid} Attempts left: ${left}.`;
    if (MESSAGES[err.code]) return MESSAGES[err.code];
  }
  return errorText(err);
}

/**
 * Continues after a sign-in answer (login, login/mfa, sso/redeem): a session goes to returnTo (or
 * to /security when the password must be changed first); an MFA challenge shows the code step in
 * `root`; an enrollment challenge goes to /mfa/enroll with the challenge kept in memory.
 * @param {HTMLElement} root
 * @param {any} answer
 * @param {string} returnTo
 */
export function continueSignIn(root, answer, returnTo) {
  if (answer?.mfaRequired) return mfaStep(root, answer.challengeToken, returnTo);
  if (answer?.mfaEnrollmentRequired) {
    startEnrollment({ challengeToken: answer.challengeToken, expiresAt: answer.expiresAt, returnTo });
    return navigate(`/mfa/enroll?returnTo=${encodeURIComponent(returnTo)}`, { replace: true });
  }
  navigate(answer?.passwordChangeRequired ? '/security' : returnTo, { replace: true });
}

/**
 * The second step: "Authentication code" (a TOTP code or a recovery code) and "Verify".
 * @param {HTMLElement} root
 * @param {string} challengeToken
 * @param {string} returnTo
 */
export function mfaStep(root, challengeToken, returnTo) {
  const status = h('div', { class: 'status' });
  const code = field('Authentication code', {
    name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code', required: true, maxlength: '32',
    spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': 'code-hint',
  });
  const input = /** @type {HTMLInputElement} */ (code.control);
  const form = h('form', { novalidate: true },
    code,
    h('p', { class: 'hint', id: 'code-hint' }, 'The 6-digit code from your authenticator app, or one of your recovery codes.'),
    h('button', { type: 'submit' }, 'Verify'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    const value = input.value.replace(/\s+/g, '');
    if (!value) {
      status.append(notice('error', 'Enter the code from your authenticator app.'));
      input.focus();
      return;
    }
    void busy(form, async () => {
      try {
        const answer = await api('POST', '/api/auth/login/mfa', { challengeToken, code: value });
        continueSignIn(root, answer, returnTo);
      } catch (err) {
        status.append(notice('error', signInError(err)));
        const over = err instanceof ApiError && /^mfa_challenge_/.test(err.code);
        if (over) {
          form.replaceChildren(h('p', {}, h('a', { href: `/login?returnTo=${encodeURIComponent(returnTo)}` }, 'Sign in again')));
        } else {
          input.select();
          input.focus();
        }
      }
    });
  });
  root.replaceChildren(h('div', { class: 'narrow card' },
    h('h1', {}, 'Two-step verification'),
    h('p', {}, 'Enter the code your authenticator app shows for this account.'),
    status,
    form,
  ));
  input.focus();
}

/**
 * The sign-in providers as links (none when the list cannot be read).
 * @param {string} returnTo
 * @returns {Promise<HTMLElement | null>}
 */
async function providerLinks(returnTo) {
  let items;
  try {
    items = (await api('GET', '/api/auth/sso/providers?pageSize=100'))?.items ?? [];
  } catch {
    return null;
  }
  if (!items.length) return null;
  return h('div', { class: 'sso' },
    h('p', { class: 'divider' }, 'or'),
    h('ul', { class: 'sso-list' }, ...items.map((/** @type {{ id: string, name: string }} */ p) => h('li', {},
      h('a', {
        class: 'button secondary',
        href: `/api/auth/sso/start?${new URLSearchParams({ providerId: p.id, returnTo })}`,
      }, `Sign in with ${p.name}`)))),
  );
}

/**
 * @param {HTMLElement} root
 * @param {URL} url
 */
export async function render(root, url) {
  const returnTo = safeReturnTo(url.searchParams.get('returnTo'));
  const status = h('div', { class: 'status' });
  const email = field('E-mail', { type: 'email', name: 'email', autocomplete: 'username', required: true, spellcheck: 'false', autocapitalize: 'off' });
  const password = field('Password', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const emailInput = /** @type {HTMLInputElement} */ (email.control);
  const passwordInput = /** @type {HTMLInputElement} */ (password.control);
  const form = h('form', { novalidate: true }, email, password, h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    if (!emailInput.value.trim() || !passwordInput.value) {
      status.append(notice('error', 'Enter your e-mail address and password.'));
      (emailInput.value.trim() ? passwordInput : emailInput).focus();
      return;
    }
    void busy(form, async () => {
      try {
        const answer = await api('POST', '/api/auth/login', { email: emailInput.value.trim(), password: passwordInput.value });
        passwordInput.value = '';
        continueSignIn(root, answer, returnTo);
      } catch (err) {
        status.append(notice('error', signInError(err)));
        passwordInput.select();
        passwordInput.focus();
      }
    });
  });
  const card = h('div', { class: 'narrow card' }, h('h1', {}, 'Sign in'), status, form);
  root.replaceChildren(card);
  emailInput.focus();
  const sso = await providerLinks(returnTo);
  if (sso && card.isConnected && card.contains(form)) card.append(sso);
}
