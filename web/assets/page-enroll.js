// @ts-check
// /mfa/enroll: the identity policy requires two-step verification and this account has none yet.
// The sign-in left an enrollment challenge, kept here in memory only (a module variable: a reload
// loses it, and the person signs in again). Set-up: the QR code and secret, "Authentication code",
// "Confirm"; then the recovery codes, shown once, and "Continue" to returnTo.
import { api } from './api.js';
import { navigate } from './app.js';
import { h, notice } from './dom.js';
import { mfaSetupWidget } from './mfa-widget.js';
import { signInError } from './page-login.js';

/** @typedef {{ challengeToken: string, expiresAt?: string, returnTo: string }} EnrollmentChallenge */

/** @type {EnrollmentChallenge | null} */
let pending = null;

/**
 * Keeps the enrollment challenge of a sign-in for /mfa/enroll.
 * @param {EnrollmentChallenge} challenge
 */
export function startEnrollment(challenge) {
  pending = challenge;
}

/**
 * @param {HTMLElement} root
 * @param {URL} _url
 */
export async function render(root, _url) {
  const card = h('div', { class: 'narrow card' }, h('h1', {}, 'Set up two-step verification'));
  root.replaceChildren(card);
  const challenge = pending;
  if (!challenge) {
    card.append(notice('error', 'Sign in first: two-step verification is set up as part of signing in.'),
      h('p', {}, h('a', { href: '/login' }, 'Go to sign in')));
    return;
  }
  card.append(h('p', {}, 'Your organization requires two-step verification. Set it up to finish signing in.'));
  let setup;
  try {
    setup = await api('POST', '/api/auth/mfa/enroll/setup', { challengeToken: challenge.challengeToken });
  } catch (err) {
    pending = null;
    card.append(notice('error', signInError(err)),
      h('p', {}, h('a', { href: `/login?returnTo=${encodeURIComponent(challenge.returnTo)}` }, 'Sign in again')));
    return;
  }
  let passwordChangeRequired = false;
  card.append(mfaSetupWidget({
    otpauthUri: setup.otpauthUri,
    secret: setup.secret,
    headingTag: 'h2',
    onConfirm: async (code) => {
      let answer;
      try {
        answer = await api('POST', '/api/auth/mfa/enroll/confirm', { challengeToken: challenge.challengeToken, code });
      } catch (err) {
        throw new Error(signInError(err), { cause: err });
      }
      pending = null; // the session cookie is set; the challenge is spent
      passwordChangeRequired = answer?.passwordChangeRequired === true;
      return answer.recoveryCodes ?? [];
    },
    onContinue: () => navigate(passwordChangeRequired ? '/security' : challenge.returnTo, { replace: true }),
  }));
}
