// @ts-check
// The overview's "Catalog" section: the current project's seasons and episodes with their shots, each
// shot an <article aria-label="Shot <title>"> showing its newest video's real first and last frames
// side by side (/api/production/media-artifacts/<id>/content?frame=first|last, built here from the
// artifact's id rather than taken from the answer; served with the session cookie).
import { api, ApiError, errorText, holds, isAborted, listAll } from './api.js';
import { h, clear, notice, section, when } from './dom.js';

/**
 * @typedef {{ id: string, episodeId: string, position: number, title: string, status: string, aspectRatio: string }} Shot
 * @typedef {{ id: string, shotId: string | null, contentUrl: string, width: number | null, height: number | null,
 *   durationMs: number | null, frameCount: number | null, createdAt: string,
 *   firstFrame: object | null, lastFrame: object | null }} Artifact
 */

/** Frames of the first this many shots load at once; later ones when scrolled near. */
const EAGER_SHOTS = 12;

/**
 * The newest video of each shot: one list of the project's newest videos, then one look-up per shot
 * the list did not reach (only when it was full).
 * @param {Shot[]} shots
 * @param {AbortSignal} signal
 * @returns {Promise<Map<string, Artifact>>}
 */
async function newestVideos(shots, signal) {
  const LIMIT = 200;
  /** @type {Artifact[]} */
  const items = (await api('GET', `/api/production/media-artifacts?kind=video&limit=${LIMIT}`, undefined, { signal })).items;
  /** @type {Map<string, Artifact>} */
  const byShot = new Map();
  for (const a of items) if (a.shotId && !byShot.has(a.shotId)) byShot.set(a.shotId, a);
  if (items.length === LIMIT) {
    const missing = shots.filter((s) => !byShot.has(s.id));
    for (let i = 0; i < missing.length; i += 6) {
      await Promise.all(missing.slice(i, i + 6).map(async (s) => {
        const a = await newestVideoOf(s.id, signal);
        if (a) byShot.set(s.id, a);
      }));
    }
  }
  return byShot;
}

/** @param {string} shotId @param {AbortSignal} signal @returns {Promise<Artifact | undefined>} */
async function newestVideoOf(shotId, signal) {
  const res = await api('GET', `/api/production/media-artifacts?shotId=${encodeURIComponent(shotId)}&kind=video&limit=1`, undefined, { signal });
  return res.items[0];
}

/** @param {number | null} ms */
const seconds = (ms) => (ms == null ? null : `${(ms / 1000).toFixed(1)} s`);

/**
 * One frame of the pair, with a visible caption.
 * @param {Artifact} a @param {'first' | 'last'} which @param {string} title @param {boolean} eager
 */
function frameFigure(a, which, title, eager) {
  const word = which === 'first' ? 'First' : 'Last';
  /** @type {Record<string, string>} */
  const attrs = { src: `/api/production/media-artifacts/${encodeURIComponent(a.id)}/content?frame=${which}`, alt: `${word} frame of ${title}`, decoding: 'async' };
  if (a.width && a.height) { attrs.width = String(a.width); attrs.height = String(a.height); }
  if (!eager) attrs.loading = 'lazy';
  const caption = h('span', { class: 'hint' }, `${word} frame`);
  const img = h('img', attrs);
  img.addEventListener('error', () => { caption.textContent = `${word} frame (could not be loaded)`; }, { once: true });
  return h('div', { class: 'frame' }, img, caption);
}

/**
 * The media part of a shot's card.
 * @param {Shot} shot @param {Artifact | undefined} video @param {boolean} eager
 */
function shotMedia(shot, video, eager) {
  if (!video) return h('p', { class: 'hint' }, 'No video yet.');
  if (!video.firstFrame || !video.lastFrame) return h('p', { class: 'hint' }, 'The newest video has no frames.');
  const facts = [
    video.width && video.height ? `${video.width}×${video.height}` : null,
    seconds(video.durationMs),
    video.frameCount != null ? `${video.frameCount} frames` : null,
  ].filter(Boolean).join(', ');
  return h('div', { class: 'shot-media' },
    h('div', { class: 'frames' }, frameFigure(video, 'first', shot.title, eager), frameFigure(video, 'last', shot.title, eager)),
    h('p', { class: 'hint' }, `Newest video${facts ? `: ${facts}` : ''} · `, when(video.createdAt)));
}

/**
 * `signal`: the page's (aborted when the page is left: no request after that).
 * @param {{ project: object | null, permissions: string[] }} context
 * @param {AbortSignal} signal
 * @returns {{ element: HTMLElement, load: () => Promise<void>, refreshShot: (shotId: string) => Promise<void>, shotTitle: (id: string) => string | undefined }}
 */
export function catalogSection(context, signal) {
  const { element, body } = section('overview-catalog', 'Catalog', { cls: 'overview-catalog' });
  body.append(h('p', { role: 'status' }, 'Loading the catalog…'));
  const canSeeMedia = holds(context.permissions, ['qa:review', 'delivery:view']);
  /** @type {Map<string, { shot: Shot, media: HTMLElement }>} */
  const cards = new Map();

  async function load() {
    if (!context.project) { clear(body); body.append(h('p', {}, 'Choose a project to see its catalog.')); return; }
    if (!holds(context.permissions, ['script:read'])) { clear(body); body.append(h('p', {}, 'Your role in this project cannot read its catalog.')); return; }
    try {
      /** @type {[any, Shot[]]} */
      const [catalog, shots] = await Promise.all([
        api('GET', '/api/production/catalog', undefined, { signal }),
        listAll('/api/production/shots', { maxPages: 20, signal }),
      ]);
      const videos = canSeeMedia ? await newestVideos(shots, signal) : new Map();
      clear(body);
      cards.clear();
      if (!canSeeMedia) body.append(h('p', { class: 'hint' }, 'Your role cannot see media evidence, so frames are not shown.'));
      /** @type {Map<string, Shot[]>} */
      const byEpisode = new Map();
      for (const s of shots) byEpisode.set(s.episodeId, [...(byEpisode.get(s.episodeId) ?? []), s]);
      let shown = 0;
      let episodes = 0;
      for (const series of catalog.series) {
        for (const season of series.seasons) {
          for (const episode of season.episodes) {
            episodes++;
            const headingId = `episode-${episode.id}`;
            const list = byEpisode.get(episode.id) ?? [];
            const articles = list.map((shot) => {
              const media = canSeeMedia ? shotMedia(shot, videos.get(shot.id), shown++ < EAGER_SHOTS) : h('div');
              cards.set(shot.id, { shot, media });
              return h('article', { class: 'card shot', 'aria-label': `Shot ${shot.title}` },
                h('h4', {}, shot.title),
                h('p', { class: 'hint' }, `Position ${shot.position} · ${shot.status} · ${shot.aspectRatio}`),
                media);
            });
            body.append(h('section', { class: 'episode', 'aria-labelledby': headingId },
              h('h3', { id: headingId }, `${season.title} · Episode ${episode.number}: ${episode.title}`),
              h('p', { class: 'hint' }, `${episode.status} · ${episode.shotCount} ${episode.shotCount === 1 ? 'shot' : 'shots'}`),
              articles.length ? h('div', { class: 'grid three shots' }, ...articles) : h('p', {}, 'No shots yet.')));
          }
        }
      }
      if (episodes === 0) body.append(h('p', {}, 'This project has no episodes yet.'));
    } catch (err) {
      if (isAborted(err) || (err instanceof ApiError && err.status === 401)) return;
      clear(body);
      body.append(notice('error', `The catalog could not be loaded: ${errorText(err)}`));
    }
  }

  /** Show a shot's newest video again (after one of its jobs completed). @param {string} shotId */
  async function refreshShot(shotId) {
    const card = cards.get(shotId);
    if (!card || !canSeeMedia) return;
    try {
      const media = shotMedia(card.shot, await newestVideoOf(shotId, signal), true);
      card.media.replaceWith(media);
      card.media = media;
    } catch { /* the next full load shows it */ }
  }

  return { element, load, refreshShot, shotTitle: (id) => cards.get(id)?.shot.title };
}
