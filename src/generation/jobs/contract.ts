// The production contract a connector receives: who and what the job is for (organization, project,
// episode, shot), its prompt, the story bible entries the shot refers to and the exact input asset
// versions with their hashes, then (input.useDependencyOutputs) the media artifacts the job's
// dependency registered. Built from the database at call time; input versions were fixed when the
// job was created, dependency artifacts are whatever that job completed with. The input files
// themselves reach the connector as local files staged from the object store (stageInputs), released
// once the call is over.
import { mapSeq } from '../../kernel/seq.ts';
import path from 'node:path';
import type { Db } from '../../db/db.ts';
import type { ContractInput, ProductionContract } from '../connectors/protocols/types.ts';
import { organizationById, projectById } from '../../directory/tenancy/store.ts';
import { episodeById, referencesOf, shotById } from '../../production/catalog/store.ts';
import { currentRevision } from '../../production/scripts/store.ts';
import type { BibleContent } from '../../production/scripts/content.ts';
import type { LocalCopy, ObjectStore } from '../../kernel/storage/store.ts';
import type { JobRow } from './store.ts';

/** What a job stores as its input (validated at creation). */
export interface JobInput {
  prompt: string;
  negativePrompt: string | null;
  parameters: Record<string, unknown>;
  inputs: Array<{ assetId: string; versionId: string }>;
  /** The workflow run step that created the job (template and version), kept in the artifacts' provenance. */
  workflow?: { templateId: string; templateVersion: number; runId: string; stepKey: string } | null;
  /** When true (and the job has depends_on), the dependency job's registered media artifacts become inputs at call time. */
  useDependencyOutputs?: boolean;
}

interface VersionRef { asset_id: string; id: string; file_name: string; mime_type: string; file_size: number; content_sha256: string; storage_path: string }
interface ArtifactRef { id: string; job_id: string; mime_type: string; file_size: number; content_sha256: string; storage_path: string }

/** The dependency's image, video and audio artifacts, oldest first, when the job takes them as inputs. */
async function dependencyArtifacts(db: Db, job: JobRow, input: JobInput): Promise<ArtifactRef[]> {
  if (!input.useDependencyOutputs || !job.depends_on) return [];
  return await db.all<ArtifactRef>(
    `SELECT id, job_id, mime_type, file_size, content_sha256, storage_path FROM media_artifacts
      WHERE project_id = ? AND job_id = ? AND kind IN ('image', 'video', 'audio') ORDER BY created_at, id`,
    job.project_id, job.depends_on,
  );
}

async function bibleOf(db: Db, projectId: string, shotId: string): Promise<ProductionContract['bible']> {
  const ids = (await referencesOf(db, projectId, shotId)).filter((r) => r.kind === 'bible').map((r) => r.ref_id);
  if (ids.length === 0) return [];
  const rev = await currentRevision(db, 'bible', projectId, projectId);
  if (!rev) return [];
  const entries = new Map((JSON.parse(rev.content) as BibleContent).entries.map((e) => [e.id, e]));
  return ids.flatMap((id) => {
    const e = entries.get(id);
    return e ? [{ id: e.id, kind: e.kind, name: e.name, revision: rev.revision }] : [];
  });
}

/** An input file of a call: the key of its object, and what the connector is told of it. */
export interface StoredInput { key: string; fileName: string; mimeType: string }

/**
 * The contract, and the stored input files in contract.inputs order (a dry run uses the contract
 * only). `names`: the organization's and project's, when the caller has them (the claim read them).
 */
export async function buildContract(
  db: Db, job: JobRow, names?: { organizationName: string; projectName: string },
): Promise<{ contract: ProductionContract; inputs: StoredInput[] }> {
  const input = JSON.parse(job.input) as JobInput;
  const org = { id: job.organization_id, name: names?.organizationName ?? (await organizationById(db, job.organization_id))!.name };
  const project = { id: job.project_id, name: names?.projectName ?? (await projectById(db, job.project_id))!.name };
  const shot = job.shot_id ? await shotById(db, job.project_id, job.shot_id) : undefined;
  const episode = shot ? await episodeById(db, job.project_id, shot.episode_id) : undefined;
  const versions = (await mapSeq(input.inputs, (i) => db.get<VersionRef>(
    'SELECT asset_id, id, file_name, mime_type, file_size, content_sha256, storage_path FROM asset_versions WHERE project_id = ? AND asset_id = ? AND id = ?',
    job.project_id, i.assetId, i.versionId))).filter((v): v is VersionRef => v !== undefined);
  const sources: Array<{ input: ContractInput; storagePath: string }> = [
    ...versions.map((v) => ({
      input: { assetId: v.asset_id, versionId: v.id, fileName: v.file_name, mimeType: v.mime_type, fileSize: v.file_size, contentSha256: v.content_sha256 },
      storagePath: v.storage_path,
    })),
    ...(await dependencyArtifacts(db, job, input)).map((a) => ({
      input: { artifactId: a.id, jobId: a.job_id, fileName: path.basename(a.storage_path), mimeType: a.mime_type, fileSize: a.file_size, contentSha256: a.content_sha256 },
      storagePath: a.storage_path,
    })),
  ];
  return {
    contract: {
      organization: { id: org.id, name: org.name },
      project: { id: project.id, name: project.name },
      episode: episode ? { id: episode.id, title: episode.title, number: episode.number } : null,
      shot: shot ? {
        id: shot.id, code: episode ? `E${episode.number}-S${shot.position}` : `S${shot.position}`, title: shot.title, description: shot.description,
      } : null,
      prompt: input.prompt,
      negativePrompt: input.negativePrompt,
      bible: shot ? await bibleOf(db, job.project_id, shot.id) : [],
      inputs: sources.map((s) => s.input),
      parameters: input.parameters,
    },
    inputs: sources.map(({ input: i, storagePath }) => ({ key: storagePath, fileName: i.fileName, mimeType: i.mimeType })),
  };
}

/** The call's input files staged as local files (the stored files themselves on local, copies under cache/ on s3). */
export interface StagedInputs {
  files: Array<{ path: string; fileName: string; mimeType: string }>;
  /** Releases every local copy (idempotent). */
  release(): Promise<void>;
}

/**
 * Stages each input with the store's localCopy(): 404 not_found when an object is missing, 422
 * unsafe_path for an unsafe key; what was staged before a failure is released.
 */
export async function stageInputs(store: ObjectStore, inputs: StoredInput[]): Promise<StagedInputs> {
  const copies: LocalCopy[] = [];
  const release = async () => {
    const all = copies.splice(0);
    await Promise.all(all.map((c) => c.release()));
  };
  try {
    for (const i of inputs) copies.push(await store.localCopy(i.key));
  } catch (err) {
    await release();
    throw err;
  }
  return { files: inputs.map((i, n) => ({ path: copies[n].path, fileName: i.fileName, mimeType: i.mimeType })), release };
}
