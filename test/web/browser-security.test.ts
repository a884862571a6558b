// The web console in a real browser (test/helpers/browser.ts), acceptance 1, password part: sign-in
// with the keyboard, a wrong password, two-step verification enabled from the security page (the secret
// read next to the QR code, which is checked to encode the otpauth:// URI), the recovery codes shown
// once, the "Sessions" section (sign out one, then all others), sign-out and sign-in with a TOTP code,
// disabling with the password, and a password change; screenshots of each page at 1280 px and 390 px
// (acceptance 2). No console error or CSP violation beyond the failed requests provoked on purpose, and
// no token in Web Storage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
// @ts-expect-error -- qrcode ships no type declarations (a test reference; used untyped)
import QRCode from 'qrcode';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';
import {
  QR_ALT, button, expectedFailure, field, heading, launchBrowser, noStoredToken, onPath, openPage, pathOf,
  problemsOf, recoveryCodesShown, secretShown, section, sessionCookie, shots, signIn, steadyNow, totp, waitFor,
  type Browser, type Page,
} from '../helpers/browser.ts';

// What the functions evaluated inside the page use (this project type-checks for Node, without the DOM library).
declare const document: any;
declare const Image: new () => any;

/**
 * The QR code image: a data: SVG that loads, and whose modules (rasterized in the page, sampled at each
 * module's centre inside the 4-module quiet zone) are the `qrcode` package's symbol of `text` in byte mode
 * at one of the EC levels with its automatic version and mask: what an authenticator app scans is the URI.
 */
async function assertQr(page: Page, text: string) {
  const img = page.getByRole('img', { name: QR_ALT, exact: true });
  await img.waitFor();
  const src = (await img.getAttribute('src')) ?? '';
  assert.match(src, /^data:image\/svg\+xml[;,]/, 'the QR code is rendered on the page (data: SVG)');
  assert.ok(await img.evaluate((el: any) => el.complete && el.naturalWidth > 0), 'the QR image loads');
  const tried: string[] = [];
  for (const ecl of ['M', 'L', 'Q', 'H']) {
    // Byte mode, as the page encodes (qrcode would otherwise mix numeric/alphanumeric segments: another, equally valid, symbol).
    const qr = QRCode.create([{ data: text, mode: 'byte' }], { errorCorrectionLevel: ecl });
    const n: number = qr.modules.size;
    const seen: boolean[] = await page.evaluate(async ({ src, n }) => {
      const im = new Image();
      im.src = src;
      await im.decode();
      const px = 8;
      const side = (n + 8) * px;
      const canvas = document.createElement('canvas');
      canvas.width = canvas.height = side;
      const g = canvas.getContext('2d')!;
      g.fillStyle = '#fff';
      g.fillRect(0, 0, side, side);
      g.drawImage(im, 0, 0, side, side);
      const data = g.getImageData(0, 0, side, side).data;
      const out: boolean[] = [];
      for (let y = 0; y < n; y++) {
        for (let x = 0; x < n; x++) {
          const i = (((y + 4) * px + px / 2) * side + (x + 4) * px + px / 2) * 4;
          out.push(data[i] + data[i + 1] + data[i + 2] < 384);
        }
      }
      return out;
    }, { src, n });
    const want = Array.from(qr.modules.data as Uint8Array, (v) => v === 1);
    if (seen.every((v, i) => v === want[i])) return;
    tried.push(`${ecl}: ${seen.filter((v, i) => v !== want[i]).length} of ${n * n} modules differ`);
  }
  assert.fail(`the QR code on the page does not encode the otpauth URI (${tried.join('; ')})`);
}

/** Signs in on /login with the keyboard only: type the e-mail, Tab to the password, Enter. */
async function signInByKeyboard(page: Page, email: string, password: string) {
  await field(page, 'E-mail').focus();
  await page.keyboard.type(email);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.type), 'password', 'Tab moves from E-mail to Password');
  await page.keyboard.type(password);
  await page.keyboard.press('Enter');
}

test('password sign-in, two-step verification enabled on the security page, sign-in with password + TOTP, sessions, disable, password change', async (t) => {
  const browser: Browser = await launchBrowser(t);
  // Provoked on purpose: the wrong password, and the signed-out probe of "/" (it asks for the session).
  const expected = [expectedFailure(401, '/api/auth/login'), expectedFailure(401, '/api/auth/session')];
  const s = await startTestServer(t);
  const { user, token } = await member(s, 'org_owner');
  const page = await openPage(browser, t);

  await page.goto(s.url + '/');
  await onPath(page, '/login');
  await shots(page, 'login');

  await signIn(page, user.email, 'not the password at all');
  await page.getByRole('alert').waitFor();
  assert.equal(new URL(page.url()).pathname, '/login', 'a wrong password stays on the sign-in page');

  await field(page, 'E-mail').fill('');
  await field(page, 'Password').fill('');
  await signInByKeyboard(page, user.email, user.password);
  await onPath(page, '/overview');
  await noStoredToken(page);

  await page.goto(s.url + '/security');
  await heading(page, 'Security').waitFor();
  await section(page, 'Two-step verification').waitFor();
  await shots(page, 'security');

  const setupAnswer = page.waitForResponse((r) => r.url().endsWith('/api/auth/mfa/setup') && r.request().method() === 'POST');
  let setupRequests = 0;
  page.on('request', (r) => { if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/auth/mfa/setup') setupRequests++; });
  // A double click starts one set-up: the button is disabled while the first is under way.
  await button(page, 'Enable two-step verification').dblclick();
  const setup = await (await setupAnswer).json();
  await assertQr(page, setup.otpauthUri);
  const secret = await secretShown(page);
  assert.equal(secret, setup.secret, 'the secret shown beside the QR code is the one set up');
  assert.equal(setupRequests, 1, 'one set-up for a double click');
  await shots(page, 'security-enable');

  const base = await steadyNow();
  await field(page, 'Authentication code').fill(totp(secret, base, -1));
  await button(page, 'Confirm').click();
  const codes = await recoveryCodesShown(page);
  assert.equal(codes.length, 10, 'ten recovery codes are shown');
  await shots(page, 'security-recovery-codes');

  await page.reload();
  await page.getByText('Two-step verification is on').waitFor();
  await button(page, 'Disable two-step verification').waitFor();
  assert.equal(await heading(page, 'Recovery codes').count(), 0, 'recovery codes are shown once');

  // Sessions: this one marked, another one signed out by its button, then all the others.
  const sessions = section(page, 'Sessions');
  await sessions.getByText('This device').waitFor();
  const other1 = await s.call('POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
  assert.equal(other1.body.mfaRequired, true, 'with TOTP on, a password alone gives no session');
  const tok1 = (await s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: other1.body.challengeToken, code: codes[0] } })).body.token;
  const other2 = await s.call('POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
  const tok2 = (await s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: other2.body.challengeToken, code: codes[1] } })).body.token;
  assert.ok(tok1 && tok2, 'recovery codes shown on the page work once each');
  await page.reload();
  const items = section(page, 'Sessions').getByRole('listitem');
  await items.nth(3).waitFor();
  const others = items.filter({ hasNotText: 'This device' });
  assert.equal(await others.count(), 3, 'the other sessions are listed (the factory\'s and two more)');
  const live = () => Promise.all([token, tok1, tok2].map(async (k) => (await s.call('GET', '/api/auth/session', { token: k })).status === 200));
  await others.first().getByRole('button', { name: 'Sign out', exact: true }).click();
  await waitFor(async () => (await others.count()) === 2, 'the signed-out session leaves the list');
  assert.equal((await live()).filter(Boolean).length, 2, 'one other session is signed out');
  await button(page, 'Sign out other sessions').click();
  await waitFor(async () => (await live()).every((ok) => !ok), 'all other sessions are signed out');
  await waitFor(async () => (await others.count()) === 0, 'only this device is listed');
  assert.equal((await page.request.get(s.url + '/api/auth/session')).status(), 200, 'this device stays signed in');

  // Sign out from the top bar, then sign in with the password and a TOTP code.
  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).or(
    page.locator('header, nav').getByRole('button', { name: 'Sign out', exact: true })).first().click();
  await onPath(page, '/login');
  assert.equal(await sessionCookie(page), undefined, 'the cookie is gone after signing out');

  await signIn(page, user.email, user.password);
  await field(page, 'Authentication code').waitFor();
  await shots(page, 'login-mfa');
  await field(page, 'Authentication code').fill(totp(secret, await steadyNow()));
  await button(page, 'Verify').click();
  await onPath(page, '/overview');
  await noStoredToken(page);

  // Disable with the password.
  await page.goto(s.url + '/security');
  await button(page, 'Disable two-step verification').click();
  await field(page, 'Password').fill(user.password);
  await button(page, 'Disable').click();
  await button(page, 'Enable two-step verification').waitFor();
  assert.equal((await s.db.get<{ mfa_enabled: number }>('SELECT mfa_enabled FROM users WHERE id = ?', user.id))!.mfa_enabled, 0);

  // Change the password: this browser stays signed in (a fresh session), the new password works.
  const newPassword = 'a brand new console passphrase';
  await field(page, 'Current password').fill(user.password);
  await field(page, 'New password').fill(newPassword);
  await button(page, 'Change password').click();
  await page.getByRole('status').filter({ hasText: /password/i }).first().waitFor();
  await page.reload();
  await heading(page, 'Security').waitFor();
  assert.equal(pathOf(page), '/security', 'still signed in after the password change');
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: user.email, password: newPassword } })).status, 200);
  assert.deepEqual(problemsOf(page, s.url, expected), []);
});
