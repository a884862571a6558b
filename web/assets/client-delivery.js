// @ts-check
// The page a client delivery link opens (web/client-delivery.html, served by GET /api/client/delivery
// when the browser asks for HTML): no account, no session. It reads the link's token from its own
// address (?token=), asks the service for the manifest (x-delivery-token header, Accept JSON) and
// shows the delivery: each approved file with a player (video, audio, image) and a download button,
// and the export package (archive and files) when the link includes it. Every file address carries
// the token in its query (href in the manifest); the page and every answer send no Referer.
import { h, clear, notice } from './dom.js';

/** @param {number | null | undefined} n */
function bytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** @param {number | null | undefined} ms */
const seconds = (ms) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '');

/** @param {string | null | undefined} iso */
function date(iso) {
  const d = new Date(iso ?? '');
  return !iso || Number.isNaN(d.getTime()) ? '' : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * The player of a delivered file, by its kind.
 * @param {any} f
 */
function player(f) {
  const label = `Preview of ${f.name}`;
  if (f.kind === 'video') return h('video', { controls: true, preload: 'metadata', playsinline: true, src: f.href, 'aria-label': label });
  if (f.kind === 'audio') return h('audio', { controls: true, preload: 'metadata', src: f.href, 'aria-label': label });
  if (f.kind === 'image') return h('img', { src: f.href, alt: label });
  return null;
}

/** @param {any} f */
function fileCard(f) {
  const facts = [f.kind, bytes(f.size), seconds(f.durationMs)].filter(Boolean).join(' · ');
  return h('section', { class: 'panel', 'aria-labelledby': `file-${f.position}` },
    h('h2', { id: `file-${f.position}` }, f.name),
    player(f),
    h('p', { class: 'hint' }, facts),
    h('p', { class: 'hint' }, 'SHA-256: ', h('code', {}, f.sha256)),
    h('p', { class: 'actions' }, h('a', { class: 'button', href: f.href, download: f.name }, `Download ${f.name}`)));
}

/** @param {any} exp */
function exportPanel(exp) {
  const rows = exp.files.map((/** @type {any} */ f) => h('tr', {},
    h('td', {}, h('a', { href: f.href, download: f.path.split('/').pop() }, f.path)),
    h('td', {}, f.role), h('td', {}, bytes(f.size))));
  return h('section', { class: 'panel', 'aria-labelledby': 'export-heading' },
    h('h2', { id: 'export-heading' }, 'Export package'),
    h('p', { class: 'hint' }, 'The delivered files with their frames, shot list, subtitles, editorial timelines (OTIO, EDL) and a manifest of every SHA-256.'),
    exp.archive
      ? h('p', { class: 'actions' }, h('a', { class: 'button', href: exp.archive.href, download: exp.archive.name }, `Download the archive (${bytes(exp.archive.size)})`))
      : null,
    h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'File'), h('th', { scope: 'col' }, 'Role'), h('th', { scope: 'col' }, 'Size'))),
      h('tbody', {}, rows))));
}

async function main() {
  const root = /** @type {HTMLElement} */ (document.getElementById('main'));
  const token = new URLSearchParams(location.search).get('token') ?? '';
  let res;
  try {
    res = await fetch('/api/client/delivery', {
      headers: { accept: 'application/json', 'x-delivery-token': token }, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
    });
  } catch {
    clear(root).append(notice('error', 'The service could not be reached. Check the connection and reload the page.'));
    return;
  }
  if (!res.ok) {
    clear(root).append(h('h1', {}, 'This delivery link is not valid'),
      notice('error', res.status === 401 ? 'It is unknown, was revoked or has expired. Ask the studio that sent it for a new link.' : `The service answered ${res.status}. Try again later.`));
    return;
  }
  const m = await res.json();
  document.title = `${m.title} · delivery`;
  clear(root).append(
    h('h1', {}, m.title),
    h('p', {}, `${m.project} · version ${m.version} · approved ${date(m.approvedAt)}`),
    h('p', { class: 'hint' }, `This link works until ${date(m.expiresAt)}. Each file is exactly the approved one: its SHA-256 is shown below.`),
    h('div', { class: 'grid two' }, m.files.map(fileCard)));
  if (m.export) root.append(exportPanel(m.export));
}

void main();
