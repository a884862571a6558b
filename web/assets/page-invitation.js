// @ts-check
// /invitations/accept?token=...: the page of an invitation's acceptUrl. It previews the invitation
// (GET /api/invitations/preview: organization, workspace, project, role, who invited, expiry) and
// then, signed out, offers "Create account and join" (POST /api/auth/register: a new account for the
// invited address, signed in at once) or "Sign in" to an existing account (which comes back here);
// signed in with the invited address, "Accept invitation" (POST /api/invitations/accept); signed in
// with another address, says so and offers to sign out. A used, revoked, resent or expired link says
// so in words. After joining, the session's scope moves to what the invitation granted.
import { api, ApiError } from './api.js';
import { currentUser, navigate } from './app.js';
import { h, busy, field, notice, when } from './dom.js';
import { continueSignIn, signInError } from './page-login.js';

/** Person-readable names of the invitable roles (the service's identifiers otherwise). */
const ROLE_LABELS = /** @type {Record<string, string>} */ ({
  org_member: 'Organization member', org_admin: 'Organization administrator',
  producer: 'Producer', writer: 'Writer', art_director: 'Art director', voice_editor: 'Voice editor', reviewer: 'Reviewer',
  project_editor: 'Project editor', project_viewer: 'Project viewer',
});

/** What a token that cannot be used means for the person holding it. */
const TOKEN_MESSAGES = /** @type {Record<string, string>} */ ({
  invitation_not_found: 'This invitation link is no longer valid: it was already used, revoked, or replaced by a newer invitation. Ask the person who invited you to send a new one.',
  invitation_expired: 'This invitation has expired. Ask the person who invited you to send a new one.',
  invitation_email_mismatch: 'This invitation was sent to another e-mail address.',
  invitation_recipient_already_member: 'You already belong to this organization.',
});

/** @param {unknown} err */
function invitationError(err) {
  if (err instanceof ApiError && TOKEN_MESSAGES[err.code]) return TOKEN_MESSAGES[err.code];
  return signInError(err);
}

/**
 * @typedef {{ id: string, name: string }} Named
 * @typedef {{ email: string, role: string, expiresAt: string, organization: Named, workspace: Named | null,
 *   project: Named | null, invitedBy: { name: string } | null }} Preview
 */

/** @param {Preview} p */
function facts(p) {
  /** @type {Array<[string, string | Node]>} */
  const rows = [['Organization', p.organization.name]];
  if (p.workspace) rows.push(['Workspace', p.workspace.name]);
  if (p.project) rows.push(['Project', p.project.name]);
  rows.push(['Role', ROLE_LABELS[p.role] ?? p.role], ['Invited address', p.email]);
  if (p.invitedBy) rows.push(['Invited by', p.invitedBy.name]);
  rows.push(['Expires', when(p.expiresAt)]);
  return h('dl', { class: 'facts' }, ...rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** Moves the session to what the invitation granted (the project, else the workspace, else the organization). @param {Preview} p */
async function moveTo(p) {
  const body = p.project ? { projectId: p.project.id } : p.workspace ? { workspaceId: p.workspace.id } : { organizationId: p.organization.id };
  try {
    await api('PATCH', '/api/context', body);
  } catch {
    // the overview shows whatever scope the session has
  }
}

/**
 * @param {HTMLElement} root
 * @param {URL} url
 */
export async function render(root, url) {
  const token = url.searchParams.get('token') ?? '';
  const heading = h('h1', {}, 'Invitation');
  const card = h('div', { class: 'narrow card' }, heading);
  root.replaceChildren(card);
  if (!token) {
    card.append(notice('error', 'This page needs the link from your invitation e-mail. Open the link exactly as you received it.'));
    return;
  }
  const loading = h('p', { role: 'status' }, 'Checking the invitation…');
  card.append(loading);
  /** @type {Preview} */
  let preview;
  try {
    preview = await api('GET', `/api/invitations/preview?${new URLSearchParams({ token })}`);
  } catch (err) {
    loading.remove();
    heading.textContent = err instanceof ApiError && err.code === 'invitation_expired' ? 'Invitation expired' : 'Invitation not valid';
    card.append(notice('error', invitationError(err)), h('p', {}, h('a', { href: '/login' }, 'Go to sign in')));
    return;
  }
  loading.remove();
  heading.textContent = `Join ${preview.organization.name}`;
  const status = h('div', { class: 'status' });
  card.append(h('p', {}, 'You are invited to work in the svc console.'), facts(preview), status);
  const user = await currentUser();
  if (!card.isConnected) return;
  const here = url.pathname + url.search;

  if (user && String(user.email).toLowerCase() === preview.email.toLowerCase()) {
    const form = h('form', { novalidate: true }, h('button', { type: 'submit' }, 'Accept invitation'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      status.replaceChildren();
      void busy(form, async () => {
        try {
          await api('POST', '/api/invitations/accept', { token });
          await moveTo(preview);
          navigate('/overview', { replace: true });
        } catch (err) {
          status.append(notice('error', invitationError(err)));
        }
      });
    });
    card.append(h('p', {}, `Signed in as ${user.email}.`), form);
    return;
  }

  if (user) {
    const signOut = h('button', { type: 'button', class: 'secondary' }, 'Sign out and use this invitation');
    signOut.addEventListener('click', () => void busy(card, async () => {
      try { await api('POST', '/api/auth/logout'); } catch { /* signed out either way */ }
      navigate(here, { replace: true });
    }));
    card.append(notice('error', `This invitation is for ${preview.email}, but you are signed in as ${user.email}. Sign out, then create an account or sign in with ${preview.email}.`),
      h('div', { class: 'actions' }, signOut));
    return;
  }

  const name = field('Your name', { name: 'name', autocomplete: 'name', required: true, maxlength: '200' });
  const email = field('E-mail', { type: 'email', name: 'email', autocomplete: 'username', value: preview.email, readonly: true, 'aria-describedby': 'email-hint' });
  const password = field('Password', { type: 'password', name: 'password', autocomplete: 'new-password', required: true, maxlength: '1024' });
  const nameInput = /** @type {HTMLInputElement} */ (name.control);
  const passwordInput = /** @type {HTMLInputElement} */ (password.control);
  const form = h('form', { novalidate: true, 'aria-labelledby': 'register-heading' },
    name, email, h('p', { class: 'hint', id: 'email-hint' }, 'The account is for the invited address.'), password,
    h('button', { type: 'submit' }, 'Create account and join'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    if (!nameInput.value.trim() || !passwordInput.value) {
      status.append(notice('error', 'Enter your name and a password.'));
      (nameInput.value.trim() ? passwordInput : nameInput).focus();
      return;
    }
    void busy(form, async () => {
      try {
        const answer = await api('POST', '/api/auth/register', { token, email: preview.email, name: nameInput.value.trim(), password: passwordInput.value });
        passwordInput.value = '';
        continueSignIn(root, answer, '/overview');
      } catch (err) {
        const fields = err instanceof ApiError ? /** @type {Record<string, string> | undefined} */ (err.details?.fields) : undefined;
        const detail = fields ? Object.entries(fields).map(([k, v]) => `${k === 'password' ? 'Password' : k}: ${v}`).join('; ') : '';
        status.append(notice('error', detail ? `${invitationError(err)} ${detail}.` : invitationError(err)));
        (fields?.password ? passwordInput : nameInput).focus();
      }
    });
  });
  card.append(
    h('h2', { id: 'register-heading' }, 'Create your account'), form,
    h('p', {}, 'Already have an account for this address? ', h('a', { href: `/login?returnTo=${encodeURIComponent(here)}` }, 'Sign in to accept')),
  );
}
