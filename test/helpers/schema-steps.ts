// A current database taken back to an older schema version, for the tests of a migration step: what
// the later steps add is removed, newest first, so that the step applies as on a database of that age.
import type { Db } from '../../src/db/db.ts';

/** Version 15: step 0016 undone (generation_jobs.workflow_run_id dropped; the trigger that follows a run's jobs fires for every job). */
export async function atVersion15(db: Db): Promise<void> {
  if (db.engine === 'sqlite') {
    await db.exec(`DROP TRIGGER workflow_runs_follow_jobs; ALTER TABLE generation_jobs DROP COLUMN workflow_run_id;
      CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs
      BEGIN
        UPDATE workflow_runs SET revision = revision + 1 WHERE id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = NEW.id);
      END;
      PRAGMA user_version = 15`);
  } else {
    await db.exec(`DROP TRIGGER workflow_runs_follow_jobs ON generation_jobs; ALTER TABLE generation_jobs DROP COLUMN workflow_run_id;
      CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs FOR EACH ROW EXECUTE FUNCTION workflow_runs_follow_jobs();
      UPDATE svc_schema_version SET version = 15`);
  }
}
