-- A job made by a workflow run's step names the run (the step names the job: workflow_run_steps.job_id),
-- so that the trigger that follows a run's jobs fires for those jobs only: a claim or a settle of any
-- other job does no trigger work.
ALTER TABLE generation_jobs ADD COLUMN workflow_run_id TEXT;
UPDATE generation_jobs SET workflow_run_id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = generation_jobs.id)
 WHERE id IN (SELECT job_id FROM workflow_run_steps WHERE job_id IS NOT NULL);
DROP TRIGGER workflow_runs_follow_jobs;
CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs WHEN NEW.workflow_run_id IS NOT NULL
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = NEW.id);
END;
