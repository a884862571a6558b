// @ts-check
// /security: the signed-in person's own security. Three sections:
// - "Two-step verification": enable TOTP (QR code drawn on the page from the otpauth:// URI, the secret
//   as text, the confirming code), the recovery codes shown once; when on, disable it with the password
//   or a code (not while the identity policy requires it).
// - "Sessions" (security-sessions.js): own live sessions, the current one marked "This device"; sign
//   out one or all others.
// - "Password": change it (the service then ends every session and starts a fresh one for this browser).
// MFA management needs the browser session (cookie): the console never holds a token.
import { api, errorText } from './api.js';
import { h, busy, field, notice, section, when } from './dom.js';
import { mfaSetupWidget } from './mfa-widget.js';
import { sessionsSection } from './security-sessions.js';

/**
 * @param {HTMLElement} root
 * @param {URL} _url
 */
export async function render(root, _url) {
  const session = await api('GET', '/api/auth/session').catch(() => null);
  const mustChange = session?.user?.passwordChangeRequired === true;
  const mustChangeNotice = mustChange ? notice('error', 'Change your password before you use the rest of the service.') : null;
  root.replaceChildren(h('h1', {}, 'Security'));
  if (mustChangeNotice) root.append(mustChangeNotice);
  const twoStep = twoStepSection();
  const sessions = sessionsSection();
  root.append(twoStep.element, sessions.element, passwordSection(async () => {
    mustChangeNotice?.remove();
    await sessions.refresh();
  }));
  await Promise.all([twoStep.ready, sessions.refresh()]);
}

// ---- Two-step verification ----

function twoStepSection() {
  const s = section('two-step', 'Two-step verification');
  const state = h('div', { class: 'mfa-state' });
  const work = h('div', { class: 'mfa-work' });
  s.body.append(state, work);

  /**
   * Shows the status from GET /api/auth/mfa (or `status` when the caller has it).
   * @param {any} [status]
   */
  async function showStatus(status) {
    let st = status;
    if (!st) {
      state.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
      try {
        st = await api('GET', '/api/auth/mfa');
      } catch (err) {
        state.replaceChildren();
        s.say('error', errorText(err));
        return;
      }
    }
    if (st.enabled) {
      const left = Number(st.recoveryCodesLeft ?? 0);
      state.replaceChildren(
        h('p', {}, h('strong', {}, 'Two-step verification is on'),
          st.enabledAt ? [' since ', when(st.enabledAt)] : null, '.'),
        h('p', { class: 'hint' }, `${left} recovery ${left === 1 ? 'code' : 'codes'} left.`),
        st.requiredByPolicy
          ? h('p', { class: 'hint' }, 'Your organization requires two-step verification, so it cannot be turned off.')
          : h('div', { class: 'actions' },
            h('button', { type: 'button', class: 'secondary', onclick: () => askDisable() }, 'Disable two-step verification')),
      );
    } else {
      state.replaceChildren(
        h('p', {}, h('strong', {}, 'Two-step verification is off'), '.'),
        h('p', { class: 'hint' }, 'When it is on, signing in also asks for a code from an authenticator app on your phone.'),
        h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => busy(state, startSetup) }, 'Enable two-step verification')),
      );
    }
  }

  /** Starts a set-up (run under busy(state): a double click starts one set-up, not two). */
  async function startSetup() {
    s.quiet();
    let setup;
    try {
      setup = await api('POST', '/api/auth/mfa/setup');
    } catch (err) {
      s.say('error', errorText(err));
      return;
    }
    state.replaceChildren();
    const cancel = h('button', {
      type: 'button', class: 'secondary',
      onclick: async () => {
        await busy(work, async () => {
          try {
            const st = await api('POST', '/api/auth/mfa/setup/cancel');
            work.replaceChildren();
            await showStatus(st);
            focusFirstButton(state);
          } catch (err) {
            s.say('error', errorText(err));
          }
        });
      },
    }, 'Cancel');
    const cancelRow = h('div', { class: 'actions' }, cancel);
    const widget = mfaSetupWidget({
      otpauthUri: setup.otpauthUri,
      secret: setup.secret,
      onConfirm: async (code) => {
        let answer;
        try {
          answer = await api('POST', '/api/auth/mfa/enable', { code });
        } catch (err) {
          throw new Error(errorText(err), { cause: err });
        }
        cancelRow.remove();
        void showStatus();
        return answer.recoveryCodes ?? [];
      },
    });
    work.replaceChildren(widget, cancelRow);
    const input = widget.querySelector('input');
    if (input) input.focus();
  }

  function askDisable() {
    s.quiet();
    const password = field('Password', { type: 'password', name: 'password', autocomplete: 'current-password' });
    const code = field('Authentication code', { name: 'code', autocomplete: 'one-time-code', spellcheck: 'false' });
    const form = h('form', { class: 'mfa-disable', novalidate: true },
      h('p', { class: 'hint' }, 'To turn two-step verification off, enter your password or a code from your authenticator app (a recovery code works too). Your recovery codes are deleted.'),
      password, code,
      h('div', { class: 'actions' },
        h('button', { type: 'submit', class: 'danger' }, 'Disable'),
        h('button', {
          type: 'button', class: 'secondary',
          onclick: () => { work.replaceChildren(); focusFirstButton(state); },
        }, 'Cancel')),
    );
    form.addEventListener('submit', (ev) => void (async () => { // the handler catches its own errors
      ev.preventDefault();
      const pw = /** @type {HTMLInputElement} */ (password.querySelector('input')).value;
      const c = /** @type {HTMLInputElement} */ (code.querySelector('input')).value.replace(/\s+/g, '');
      if (!pw && !c) {
        s.say('error', 'Enter your password or an authentication code.');
        return;
      }
      await busy(form, async () => {
        try {
          const st = await api('POST', '/api/auth/mfa/disable', pw ? { password: pw } : { code: c });
          work.replaceChildren();
          await showStatus(st);
          s.say('status', 'Two-step verification is now off.');
          focusFirstButton(state);
        } catch (err) {
          s.say('error', errorText(err));
        }
      });
    })());
    work.replaceChildren(form);
    /** @type {HTMLInputElement} */ (password.querySelector('input')).focus();
  }

  return { element: s.element, ready: showStatus() };
}

/** @param {HTMLElement} el */
function focusFirstButton(el) {
  const b = el.querySelector('button');
  if (b) b.focus();
}

// ---- Password ----

/** @param {() => Promise<void>} afterChange */
function passwordSection(afterChange) {
  // Not named by its heading, or the region would share the name "Password" with the field of the
  // disable form (and getByLabel('Password') would find both).
  const s = section('password', 'Password', { named: false });
  const current = field('Current password', { type: 'password', name: 'currentPassword', autocomplete: 'current-password', required: true });
  const next = field('New password', {
    // No minlength here: the minimum is the identity policy's (the hint's 12 unless the organization
    // set another); the service's 422 message says what is wrong.
    type: 'password', name: 'newPassword', autocomplete: 'new-password', required: true, maxlength: '1024',
    'aria-describedby': 'new-password-hint',
  });
  const form = h('form', { class: 'password-form', novalidate: true },
    current,
    next,
    h('p', { class: 'hint', id: 'new-password-hint' }, 'Choose a long password (at least 12 characters unless your organization set another minimum) that is not a common one and not your e-mail address.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Change password')),
  );
  const currentInput = /** @type {HTMLInputElement} */ (current.querySelector('input'));
  const nextInput = /** @type {HTMLInputElement} */ (next.querySelector('input'));
  form.addEventListener('submit', (ev) => void (async () => { // the handler catches its own errors
    ev.preventDefault();
    if (!currentInput.value || !nextInput.value) {
      s.say('error', 'Enter your current password and a new one.');
      (currentInput.value ? nextInput : currentInput).focus();
      return;
    }
    await busy(form, async () => {
      try {
        await api('POST', '/api/auth/password', { currentPassword: currentInput.value, newPassword: nextInput.value });
        currentInput.value = '';
        nextInput.value = '';
        s.say('status', 'Your password is changed. Every other session was signed out.');
        await afterChange();
      } catch (err) {
        s.say('error', errorText(err));
      }
    });
  })());
  s.body.append(form);
  return s.element;
}
