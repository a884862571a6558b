// @ts-check
// The TOTP set-up widget shared by the security page and the enrollment page: the QR code of the
// otpauth:// URI (drawn here by qr.js, never fetched), the secret as text, the confirming code, and
// then the recovery codes, shown once.
import { h, busy, field, notice } from './dom.js';
import { qrMatrix, qrSvg } from './qr.js';

/**
 * @typedef {object} MfaSetupOptions
 * @property {string} otpauthUri the `otpauth://totp/...` URI from the set-up answer
 * @property {string} secret the base32 secret (shown as text for manual entry)
 * @property {(code: string) => Promise<string[]>} onConfirm sends the code; resolves to the recovery codes
 *   (throws, e.g. an ApiError, when the code is refused: the message is shown and the form stays)
 * @property {() => void} [onContinue] when given, a "Continue" button under the recovery codes calls it
 * @property {'h2' | 'h3' | 'h4'} [headingTag] the tag of the "Recovery codes" heading (default "h3")
 */

/**
 * The data: URL of the QR code of `text` (an SVG image; the CSP allows data: images).
 * @param {string} text
 */
export function qrDataUrl(text) {
  return 'data:image/svg+xml;base64,' + btoa(qrSvg(qrMatrix(text, 'M'), 4));
}

/**
 * The set-up widget: QR code + secret + "Authentication code" + "Confirm"; after a confirmed code the
 * same element shows the "Recovery codes" once (and "Continue" when opts.onContinue is given).
 * @param {MfaSetupOptions} opts
 * @returns {HTMLElement}
 */
export function mfaSetupWidget(opts) {
  const { otpauthUri, secret, onConfirm, onContinue, headingTag = 'h3' } = opts;
  const root = h('div', { class: 'mfa-setup' });
  const status = h('div', { class: 'mfa-setup-status' });

  const img = h('img', {
    class: 'qr', src: qrDataUrl(otpauthUri), alt: 'QR code for your authenticator app', width: '232', height: '232',
  });
  const secretText = h('code', { class: 'mfa-secret' }, secret);
  const codeLabel = field('Authentication code', {
    name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code', required: 'required', maxlength: '6',
    pattern: '[0-9]{6}', spellcheck: 'false',
  });
  const input = /** @type {HTMLInputElement} */ (codeLabel.querySelector('input'));
  const button = h('button', { type: 'submit' }, 'Confirm');
  const form = h('form', { class: 'mfa-setup-form', novalidate: 'novalidate' }, codeLabel, button);

  form.addEventListener('submit', (ev) => void (async () => { // the handler catches its own errors
    ev.preventDefault();
    const code = input.value.replace(/\s+/g, '');
    status.replaceChildren();
    if (!/^[0-9]{6}$/.test(code)) {
      status.append(notice('error', 'Enter the 6-digit code your authenticator app shows.'));
      input.focus();
      return;
    }
    await busy(form, async () => {
      try {
        const codes = await onConfirm(code);
        root.replaceChildren(recoveryCodes(codes, headingTag, onContinue));
        const heading = root.querySelector('[tabindex="-1"]');
        if (heading instanceof HTMLElement) heading.focus();
      } catch (err) {
        status.append(notice('error', err instanceof Error && err.message ? err.message : 'The code was not accepted.'));
        input.select();
        input.focus();
      }
    });
  })());

  root.append(
    h('p', {}, 'Scan this QR code with your authenticator app, then enter the code it shows.'),
    img,
    h('p', { class: 'mfa-secret-line' }, 'Or enter this key by hand: ', secretText),
    status,
    form,
  );
  return root;
}

/**
 * The recovery codes, shown once: a heading "Recovery codes", a list, a hint, and "Continue" when asked.
 * @param {string[]} codes
 * @param {'h2' | 'h3' | 'h4'} headingTag
 * @param {(() => void) | undefined} onContinue
 */
function recoveryCodes(codes, headingTag, onContinue) {
  const section = h('section', { class: 'recovery-codes', 'aria-labelledby': 'recovery-codes-heading' },
    h(headingTag, { id: 'recovery-codes-heading', tabindex: '-1' }, 'Recovery codes'),
    notice('status', 'Save these codes somewhere safe: each works once in place of a code, and they are shown only now.'),
    h('ul', { class: 'recovery-code-list' }, ...codes.map((c) => h('li', {}, h('code', {}, c)))),
  );
  if (onContinue) section.append(h('button', { type: 'button', onclick: () => onContinue() }, 'Continue'));
  return section;
}
