// Media evidence of the current project: artifacts (qa:review or delivery:view), their files and
// their real first and last frames, read from the store (ctx.storage). A stored key that leaves the
// store answers 422 unsafe_path; a registered file not in the store 404.
import { mapSeq } from '../../kernel/seq.ts';
import path from 'node:path';
import { json, type Router } from '../../http/router.ts';
import { notFound } from '../../kernel/errors.ts';
import { fileResponse, storedReply } from '../../http/content.ts';
import { ARTIFACT_MEDIA_TYPES } from '../../media-tools/evidence.ts';
import * as o from '../../kernel/view.ts';
import { ArtifactContentQuery, ArtifactListQuery } from './schema.ts';
import { MEDIA_READ, MediaArtifactView, presentArtifact } from './present.ts';
import { artifactInProject, artifactsOfProject } from './store.ts';

export function bindMediaRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const base = { tags: ['media'], scope: 'project' as const, permission: MEDIA_READ };

  r.get('/api/production/media-artifacts', {
    ...base, query: ArtifactListQuery,
    summary: 'Media artifacts of the current project, newest first; filters shotId, jobId, episodeId, kind; limit (default 50, at most 200).',
    response: { description: 'the artifacts, newest first', schema: o.object({ items: o.array(MediaArtifactView) }) },
  }, async ({ ctx, query }) => {
    const rows = await artifactsOfProject(ctx.db, ctx.scope.projectId!, {
      shotId: query.shotId ?? null, jobId: query.jobId ?? null, episodeId: query.episodeId ?? null, kind: query.kind ?? null, limit: query.limit ?? 50,
    });
    return json(200, { items: await mapSeq(rows, (a) => presentArtifact(ctx.db, a)) });
  });

  r.get('/api/production/media-artifacts/:artifactId', { ...base, summary: 'One media artifact with its evidence, provenance, continuity and composition.', response: { description: 'the artifact', schema: MediaArtifactView } },
    async ({ ctx, params }) => {
      const a = await artifactInProject(ctx.db, ctx.scope.projectId!, params.artifactId);
      if (!a) throw notFound('no such media artifact in this project');
      return json(200, await presentArtifact(ctx.db, a));
    });

  r.get('/api/production/media-artifacts/:artifactId/content', {
    ...base, query: ArtifactContentQuery,
    summary: 'The file (real Content-Type, Content-Length, inline file name, ETag "<sha256>", If-None-Match 304, Range 206), or with frame=first|last its real first or last frame as PNG. 404 when missing or not on disk, 422 unsafe_path when the stored path leaves storage/.',
    response: fileResponse(ARTIFACT_MEDIA_TYPES),
  }, async ({ ctx, req, params, query }) => {
    const a = await artifactInProject(ctx.db, ctx.scope.projectId!, params.artifactId);
    if (!a) throw notFound('no such media artifact in this project');
    if (!query.frame) return storedReply(req, ctx.storage, a);
    const [framePath, sha] = query.frame === 'first' ? [a.first_frame_path, a.first_frame_sha256] : [a.last_frame_path, a.last_frame_sha256];
    if (!framePath || !sha) throw notFound(`the artifact has no frames (${a.kind})`);
    const stem = path.basename(a.file_name, path.extname(a.file_name));
    return storedReply(req, ctx.storage, { storage_path: framePath, content_sha256: sha, mime_type: 'image/png', file_name: `${stem}-${query.frame}.png` });
  });
}
