// SQL of workflow templates, their versions and runs. Template reads name the scopes the caller can
// see (global, its organization, its workspace); run reads name the project.
import type { Db } from '../../db/db.ts';

export interface TemplateRow {
  id: string; scope: 'global' | 'organization' | 'workspace'; organization_id: string | null; workspace_id: string | null;
  template_key: string; version: number; created_by: string | null; created_at: string; updated_at: string;
}
export interface VersionRow {
  template_id: string; version: number; name: string; category: string; status: 'draft' | 'active' | 'archived'; description: string;
  default_adapter_id: string | null; steps: string; gates: string; created_by: string | null; created_at: string;
}
/** A template with its current version. */
export type CurrentTemplate = TemplateRow & Omit<VersionRow, 'template_id' | 'version' | 'created_by' | 'created_at'> & { version_created_at: string };

export interface RunRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; template_id: string; template_version: number;
  mode: 'plan' | 'queue'; status: string; shot_id: string | null; episode_id: string | null; adapter_id: string | null; priority: number;
  approve_external: number; created_by: string | null; created_at: string;
}
export type RunWithStatus = RunRow & { template_key: string; template_name: string };
export interface RunStepRow {
  run_id: string; position: number; step_key: string; label: string; job_kind: string; shot_id: string | null; connector_id: string | null;
  job_id: string | null; preview: string; blockers: string;
}
export type RunStepWithJob = RunStepRow & { job_status: string | null; job_error: string | null; job_attempt: number | null };
export interface RunGateRow {
  run_id: string; gate_key: string; label: string; blocking: number; status: 'pending' | 'passed' | 'failed';
  decided_by: string | null; decided_at: string | null; note: string | null;
  /** The QA run that decided the gate; null when pending or decided by a person. */
  qa_run_id: string | null;
}

const CURRENT = `SELECT t.*, v.name, v.category, v.status, v.description, v.default_adapter_id, v.steps, v.gates, v.created_at AS version_created_at
  FROM workflow_templates t JOIN workflow_template_versions v ON v.template_id = t.id AND v.version = t.version`;
const VISIBLE = `(t.scope = 'global' OR (t.scope = 'organization' AND t.organization_id = ?) OR (t.scope = 'workspace' AND t.workspace_id = ?))`;

/** Templates the caller sees from an organization (and workspace, when one is current). */
export const visibleTemplates = (db: Db, organizationId: string, workspaceId: string | null) =>
  db.all<CurrentTemplate>(`${CURRENT} WHERE ${VISIBLE} ORDER BY t.template_key, t.id`, organizationId, workspaceId);
export const visibleTemplate = (db: Db, organizationId: string, workspaceId: string | null, id: string) =>
  db.get<CurrentTemplate>(`${CURRENT} WHERE t.id = ? AND ${VISIBLE}`, id, organizationId, workspaceId);
export const templateById = (db: Db, id: string) => db.get<CurrentTemplate>(`${CURRENT} WHERE t.id = ?`, id);
/** The template with a key in a scope; a null organization or workspace matches null (a global or organization template). */
export const templateWithKey = (db: Db, scope: TemplateRow['scope'], organizationId: string | null, workspaceId: string | null, key: string) =>
  db.get<TemplateRow>(
    `SELECT * FROM workflow_templates
      WHERE scope = ? AND organization_id IS NOT DISTINCT FROM ? AND workspace_id IS NOT DISTINCT FROM ? AND template_key = ?`,
    scope, organizationId, workspaceId, key);

export const versionOf = (db: Db, templateId: string, version: number) =>
  db.get<VersionRow>('SELECT * FROM workflow_template_versions WHERE template_id = ? AND version = ?', templateId, version);
export const versionsOf = (db: Db, templateId: string) =>
  db.all<Pick<VersionRow, 'version' | 'status' | 'name' | 'created_by' | 'created_at'>>(
    'SELECT version, status, name, created_by, created_at FROM workflow_template_versions WHERE template_id = ? ORDER BY version DESC', templateId);

export async function insertTemplate(db: Db, t: TemplateRow): Promise<void> {
  await db.run(
    `INSERT INTO workflow_templates (id, scope, organization_id, workspace_id, template_key, version, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    t.id, t.scope, t.organization_id, t.workspace_id, t.template_key, t.version, t.created_by, t.created_at, t.updated_at);
}

export async function insertVersion(db: Db, v: VersionRow): Promise<void> {
  await db.run(
    `INSERT INTO workflow_template_versions (template_id, version, name, category, status, description, default_adapter_id, steps, gates, created_by, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    v.template_id, v.version, v.name, v.category, v.status, v.description, v.default_adapter_id, v.steps, v.gates, v.created_by, v.created_at);
}

/** Moves the template to its next version; false when another writer got there first. */
export const advanceTemplate = async (db: Db, id: string, from: number, at: string) =>
  (await db.run('UPDATE workflow_templates SET version = ?, updated_at = ? WHERE id = ? AND version = ?', from + 1, at, id, from)).changes === 1;

/** The status is set by the triggers once the steps are written. */
export async function insertRun(db: Db, r: Omit<RunRow, 'status'>): Promise<void> {
  await db.run(
    `INSERT INTO workflow_runs (id, organization_id, workspace_id, project_id, template_id, template_version, mode, shot_id, episode_id, adapter_id,
       priority, approve_external, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.organization_id, r.workspace_id, r.project_id, r.template_id, r.template_version, r.mode, r.shot_id, r.episode_id, r.adapter_id,
    r.priority, r.approve_external, r.created_by, r.created_at);
}

export async function insertRunStep(db: Db, s: RunStepRow): Promise<void> {
  await db.run(
    `INSERT INTO workflow_run_steps (run_id, position, step_key, label, job_kind, shot_id, connector_id, job_id, preview, blockers)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    s.run_id, s.position, s.step_key, s.label, s.job_kind, s.shot_id, s.connector_id, s.job_id, s.preview, s.blockers);
}

export async function insertRunGate(db: Db, g: RunGateRow): Promise<void> {
  await db.run(
    'INSERT INTO workflow_run_gates (run_id, gate_key, label, blocking, status, decided_by, decided_at, note, qa_run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    g.run_id, g.gate_key, g.label, g.blocking, g.status, g.decided_by, g.decided_at, g.note, g.qa_run_id);
}

// The run status is stored by the schema's triggers (workflow_runs_derive_status: one definition),
// so lists filter and count through workflow_runs_project_status and stop at their limit.
const RUNS = `SELECT r.*, t.template_key, v.name AS template_name FROM workflow_runs r JOIN workflow_templates t ON t.id = r.template_id
  JOIN workflow_template_versions v ON v.template_id = r.template_id AND v.version = r.template_version`;

export const runsOfProject = (db: Db, projectId: string, status: string | null, limit: number) =>
  db.all<RunWithStatus>(`${RUNS} WHERE r.project_id = ? AND (r.status = ?2 OR ?2 IS NULL) ORDER BY r.created_at DESC, r.id DESC LIMIT ?3`, projectId, status, limit);
export const countRuns = async (db: Db, projectId: string, status: string | null) =>
  (await db.get<{ n: number }>('SELECT count(*) AS n FROM workflow_runs WHERE project_id = ?1 AND (status = ?2 OR ?2 IS NULL)', projectId, status))!.n;
export const runInProject = (db: Db, projectId: string, id: string) =>
  db.get<RunWithStatus>(`${RUNS} WHERE r.project_id = ? AND r.id = ?`, projectId, id);

export async function stepsOfRuns(db: Db, runIds: string[]): Promise<RunStepWithJob[]> {
  if (runIds.length === 0) return [];
  return await db.all<RunStepWithJob>(
    `SELECT st.*, j.status AS job_status, j.error AS job_error, j.attempt AS job_attempt FROM workflow_run_steps st
     LEFT JOIN generation_jobs j ON j.id = st.job_id WHERE st.run_id IN (SELECT value FROM ${db.dialect.jsonValues('?')}) ORDER BY st.run_id, st.position`,
    JSON.stringify(runIds));
}
/**
 * The gates of the runs, by run, each run's in the order of its template version's gates (the order
 * they were inserted in; a gate has no position column of its own).
 */
export async function gatesOfRuns(db: Db, runIds: string[]): Promise<RunGateRow[]> {
  if (runIds.length === 0) return [];
  const rows = await db.all<RunGateRow & { template_gates: string }>(
    `SELECT g.*, v.gates AS template_gates FROM workflow_run_gates g JOIN workflow_runs r ON r.id = g.run_id
       JOIN workflow_template_versions v ON v.template_id = r.template_id AND v.version = r.template_version
      WHERE g.run_id IN (SELECT value FROM ${db.dialect.jsonValues('?')}) ORDER BY g.run_id, g.gate_key`, JSON.stringify(runIds));
  const keysOf = new Map<string, string[]>();
  const position = (g: RunGateRow & { template_gates: string }): number => {
    let keys = keysOf.get(g.template_gates);
    if (!keys) keysOf.set(g.template_gates, (keys = (JSON.parse(g.template_gates) as Array<{ key: string }>).map((t) => t.key)));
    const i = keys.indexOf(g.gate_key);
    return i < 0 ? keys.length : i;
  };
  return rows
    .map((g) => ({ g, at: position(g) }))
    .sort((a, b) => (a.g.run_id < b.g.run_id ? -1 : a.g.run_id > b.g.run_id ? 1 : a.at - b.at))
    .map(({ g: { template_gates: _, ...g } }) => g);
}

/** Records QA's decision on a gate; false when the run has no such gate. */
/** Decides a gate; `qaRunId` names the QA run that decided it (null: a person). */
export const decideGate = async (
  db: Db, runId: string, key: string, status: 'pending' | 'passed' | 'failed', by: string | null, at: string, note: string | null, qaRunId: string | null = null,
) =>
  (await db.run('UPDATE workflow_run_gates SET status = ?, decided_by = ?, decided_at = ?, note = ?, qa_run_id = ? WHERE run_id = ? AND gate_key = ?',
    status, status === 'pending' ? null : by, status === 'pending' ? null : at, note, status === 'pending' ? null : qaRunId, runId, key)).changes === 1;
