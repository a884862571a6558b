-- The head of the audit log's hash chain (src/platform/audit/store.ts): seq and hash of the last row,
-- which every append reads with the row's values and the trigger moves to the new row. Seeded from
-- the log: the highest seq handed out (AUTOINCREMENT kept it in sqlite_sequence; it is higher than
-- the last row's when rows at the end were removed, which `svc audit verify` keeps reporting) and the
-- hash of the last row (64 zeros for an empty log).
CREATE TABLE audit_chain_head (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  hash TEXT NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash)
SELECT 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'), 0), coalesce((SELECT max(seq) FROM audit_log), 0)),
       coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1), '0000000000000000000000000000000000000000000000000000000000000000');
CREATE TRIGGER audit_log_head AFTER INSERT ON audit_log
BEGIN UPDATE audit_chain_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1 AND seq < NEW.seq; END;

-- The bytes of the files stored per organization and workspace ever, each file counted whole (an asset
-- version; a media artifact with its frames), added by the triggers below in the transaction that
-- registers the file: the storage warnings (src/commercial/quotas/warnings.ts) bound a scope's stored
-- bytes from above by an exact count plus what was added since (rowid ranges before). It starts empty:
-- only its growth after an exact count is ever read.
CREATE TABLE storage_added (
  organization_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (organization_id, workspace_id)
);
CREATE TRIGGER asset_versions_added AFTER INSERT ON asset_versions
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size)
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
END;
CREATE TRIGGER media_artifacts_added AFTER INSERT ON media_artifacts
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size + coalesce(NEW.first_frame_size, 0) + coalesce(NEW.last_frame_size, 0))
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
END;
