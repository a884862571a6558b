-- Re-running QA re-decides the workflow gates QA decided (src/qa/gates.ts): a gate remembers the QA
-- run that decided it; null when undecided or decided by a person (whose decision QA leaves alone).
ALTER TABLE workflow_run_gates ADD COLUMN qa_run_id TEXT;
