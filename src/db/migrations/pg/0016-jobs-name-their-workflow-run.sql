-- A job made by a workflow run's step names the run (the step names the job: workflow_run_steps.job_id),
-- so that the trigger that follows a run's jobs fires for those jobs only: a claim or a settle of any
-- other job does no trigger work.
ALTER TABLE generation_jobs ADD COLUMN workflow_run_id text;
UPDATE generation_jobs j SET workflow_run_id = st.run_id FROM workflow_run_steps st WHERE st.job_id = j.id;
DROP TRIGGER workflow_runs_follow_jobs ON generation_jobs;
CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs
  FOR EACH ROW WHEN (NEW.workflow_run_id IS NOT NULL) EXECUTE FUNCTION workflow_runs_follow_jobs();
