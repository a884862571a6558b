// The one indexing function every domain calls, inside the transaction that writes the object.
// Only display fields go in: titles, descriptions, prompts, statuses; never connector endpoints,
// API keys, tokens or storage paths. Each type is read (shown in results) under the rule of the route
// that opens that kind of object (`read`, from src/directory/tenancy/reads.ts).
import type { Db, Statement } from '../../db/db.ts';
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';

export const SEARCH_TYPES = {
  project: { label: 'Project', tab: 'overview', read: READ_ACCESS.project },
  episode: { label: 'Episode', tab: 'catalog', read: READ_ACCESS.episode },
  script: { label: 'Script', tab: 'script', read: READ_ACCESS.script },
  shot: { label: 'Shot', tab: 'shots', read: READ_ACCESS.shot },
  asset: { label: 'Asset', tab: 'assets', read: READ_ACCESS.asset },
  task: { label: 'Collaboration task', tab: 'tasks', read: READ_ACCESS.task },
  job: { label: 'Generation job', tab: 'jobs', read: READ_ACCESS.job },
  delivery: { label: 'Delivery record', tab: 'delivery', read: READ_ACCESS.delivery },
} as const;
export type SearchType = keyof typeof SEARCH_TYPES;

export interface SearchDocument {
  type: SearchType;
  id: string;
  organizationId: string;
  workspaceId: string | null;
  projectId: string | null;
  title: string;
  subtitle?: string;
  body?: string;
  status?: string;
  updatedAt: string;
}

const MAX_BODY = 20_000;

/** Adds or replaces the search document of one object. */
export async function indexDocument(db: Db, d: SearchDocument): Promise<void> {
  await db.run(
    `INSERT INTO search_documents (doc_key, type, target_id, organization_id, workspace_id, project_id, title, subtitle, body, status, target_tab, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
     ON CONFLICT (doc_key) DO UPDATE SET title = ?7, subtitle = ?8, body = ?9, status = ?10, updated_at = ?12,
       organization_id = ?4, workspace_id = ?5, project_id = ?6`,
    `${d.type}:${d.id}`, d.type, d.id, d.organizationId, d.workspaceId, d.projectId, d.title, d.subtitle ?? '',
    (d.body ?? '').slice(0, MAX_BODY), d.status ?? '', SEARCH_TYPES[d.type].tab, d.updatedAt,
  );
}

/**
 * Changes only the shown status of a document (a job finishing): no text, no date, so neither the
 * FTS index nor the date indexes are rewritten.
 */
export async function setDocumentStatus(db: Db, type: SearchType, id: string, status: string): Promise<void> {
  const s = documentStatus(type, id, status);
  await db.run(s.sql, ...s.params);
}

/** setDocumentStatus's statement. */
const documentStatus = (type: SearchType, id: string, status: string): Statement =>
  ({ sql: 'UPDATE search_documents SET status = ? WHERE doc_key = ?', params: [status, `${type}:${id}`] });

/**
 * The statements that set the shown status of documents of `type`: one document's, or, as a part of
 * a larger statement, those whose ids the relation `ids` (a column `id`) answers.
 */
export const documentStatuses = (type: SearchType, status: string) => ({
  one: (id: string) => documentStatus(type, id, status),
  of: (ids: string): Statement => ({ sql: `UPDATE search_documents SET status = ? WHERE doc_key IN (SELECT ? || id FROM ${ids})`, params: [status, `${type}:`] }),
});

export async function removeDocument(db: Db, type: SearchType, id: string): Promise<void> {
  await db.run('DELETE FROM search_documents WHERE doc_key = ?', `${type}:${id}`);
}
