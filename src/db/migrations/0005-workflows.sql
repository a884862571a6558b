-- Workflow templates (global built-in, organization, workspace), their immutable versions, and the
-- runs made from them: one row a step (its job once queued) and one row a quality gate.

CREATE TABLE workflow_templates (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL CHECK (scope IN ('global', 'organization', 'workspace')),
  organization_id TEXT REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  template_key TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((scope = 'global' AND organization_id IS NULL AND workspace_id IS NULL)
      OR (scope = 'organization' AND organization_id IS NOT NULL AND workspace_id IS NULL)
      OR (scope = 'workspace' AND organization_id IS NOT NULL AND workspace_id IS NOT NULL))
);
CREATE UNIQUE INDEX workflow_templates_key ON workflow_templates(scope, ifnull(organization_id, ''), ifnull(workspace_id, ''), template_key);
CREATE INDEX workflow_templates_org ON workflow_templates(organization_id, template_key);

-- Every create and update writes a version; a version never changes (the trigger refuses it).
CREATE TABLE workflow_template_versions (
  template_id TEXT NOT NULL REFERENCES workflow_templates(id),
  version INTEGER NOT NULL,
  name TEXT NOT NULL,
  category TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
  description TEXT NOT NULL,
  default_adapter_id TEXT,
  steps TEXT NOT NULL,
  gates TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (template_id, version)
);
CREATE TRIGGER workflow_template_versions_immutable BEFORE UPDATE ON workflow_template_versions
BEGIN
  SELECT RAISE(ABORT, 'workflow template versions are immutable');
END;

-- A run: plan (no jobs) or queue (one job a step). Its status follows its jobs and gates (the
-- triggers below store it).
CREATE TABLE workflow_runs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  template_id TEXT NOT NULL,
  template_version INTEGER NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('plan', 'queue')),
  status TEXT NOT NULL DEFAULT 'queued'
    CHECK (status IN ('planned', 'queued', 'running', 'blocked', 'awaiting_qa', 'failed', 'completed', 'cancelled')),
  revision INTEGER NOT NULL DEFAULT 0,
  shot_id TEXT REFERENCES shots(id),
  episode_id TEXT REFERENCES episodes(id),
  adapter_id TEXT,
  priority INTEGER NOT NULL,
  approve_external INTEGER NOT NULL CHECK (approve_external IN (0, 1)),
  created_by TEXT,
  created_at TEXT NOT NULL,
  FOREIGN KEY (template_id, template_version) REFERENCES workflow_template_versions(template_id, version)
);
CREATE INDEX workflow_runs_project ON workflow_runs(project_id, created_at);
CREATE INDEX workflow_runs_project_status ON workflow_runs(project_id, status, created_at);

CREATE TABLE workflow_run_steps (
  run_id TEXT NOT NULL REFERENCES workflow_runs(id),
  position INTEGER NOT NULL,
  step_key TEXT NOT NULL,
  label TEXT NOT NULL,
  job_kind TEXT NOT NULL,
  shot_id TEXT,
  connector_id TEXT,
  job_id TEXT UNIQUE REFERENCES generation_jobs(id),
  preview TEXT NOT NULL,
  blockers TEXT NOT NULL,
  PRIMARY KEY (run_id, position)
);

-- Gates are evaluated by QA; a blocking gate that has not passed holds a run whose jobs completed.
CREATE TABLE workflow_run_gates (
  run_id TEXT NOT NULL REFERENCES workflow_runs(id),
  gate_key TEXT NOT NULL,
  label TEXT NOT NULL,
  blocking INTEGER NOT NULL CHECK (blocking IN (0, 1)),
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'passed', 'failed')),
  decided_by TEXT,
  decided_at TEXT,
  note TEXT,
  PRIMARY KEY (run_id, gate_key)
);

-- A change to a run's steps, to the status or attempt of one of its jobs or to one of its gates
-- bumps the run's `revision`; the trigger on `revision` stores the run status (first match wins):
-- plan mode -> planned; a step's job failed -> blocked; a step's job cancelled -> cancelled; every
-- job completed -> failed (a blocking gate failed), awaiting_qa (a blocking gate pending) or
-- completed; a job started, running or done -> running; else queued.
CREATE TRIGGER workflow_runs_derive_status AFTER UPDATE OF revision ON workflow_runs
BEGIN
  UPDATE workflow_runs SET status = (
    SELECT CASE
      WHEN NEW.mode = 'plan' THEN 'planned'
      WHEN sum(j.status = 'failed') > 0 THEN 'blocked'
      WHEN sum(j.status = 'cancelled') > 0 THEN 'cancelled'
      WHEN sum(j.status = 'completed') = count(*) THEN CASE
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'failed') THEN 'failed'
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'pending') THEN 'awaiting_qa'
        ELSE 'completed' END
      WHEN sum(j.status IN ('running', 'completed') OR j.attempt > 0) > 0 THEN 'running'
      ELSE 'queued' END
    FROM workflow_run_steps st LEFT JOIN generation_jobs j ON j.id = st.job_id WHERE st.run_id = NEW.id)
  WHERE id = NEW.id;
END;
CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = NEW.id);
END;
CREATE TRIGGER workflow_runs_follow_steps AFTER INSERT ON workflow_run_steps
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = NEW.run_id;
END;
CREATE TRIGGER workflow_runs_follow_gates AFTER UPDATE OF status ON workflow_run_gates
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = NEW.run_id;
END;
