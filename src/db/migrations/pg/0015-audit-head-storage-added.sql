-- The head of the audit log's hash chain (src/platform/audit/store.ts): seq and hash of the last row,
-- which every append reads (locking it until the transaction ends) with the row's values and the
-- trigger moves to the new row. Seeded from the last row (64 zeros for an empty log): the identity
-- sequence is not read, it also counts the inserts that rolled back.
CREATE TABLE audit_chain_head (
  id bigint PRIMARY KEY CHECK (id = 1),
  seq bigint NOT NULL,
  hash text NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash)
SELECT 1, coalesce((SELECT max(seq) FROM audit_log), 0), coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1), '0000000000000000000000000000000000000000000000000000000000000000');
CREATE FUNCTION audit_log_head() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE audit_chain_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1 AND seq < NEW.seq;
  RETURN NULL;
END $$;
CREATE TRIGGER audit_log_head AFTER INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_head();

-- The bytes of the files stored per organization and workspace ever, each file counted whole (an asset
-- version; a media artifact with its frames), added by the triggers below in the transaction that
-- registers the file: the storage warnings (src/commercial/quotas/warnings.ts) bound a scope's stored
-- bytes from above by an exact count plus what was added since (rowid ranges before). It starts empty:
-- only its growth after an exact count is ever read.
CREATE TABLE storage_added (
  organization_id text NOT NULL,
  workspace_id text NOT NULL,
  bytes bigint NOT NULL,
  PRIMARY KEY (organization_id, workspace_id)
);
CREATE FUNCTION asset_versions_added() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size)
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
  RETURN NULL;
END $$;
CREATE TRIGGER asset_versions_added AFTER INSERT ON asset_versions
  FOR EACH ROW EXECUTE FUNCTION asset_versions_added();
CREATE FUNCTION media_artifacts_added() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size + coalesce(NEW.first_frame_size, 0) + coalesce(NEW.last_frame_size, 0))
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
  RETURN NULL;
END $$;
CREATE TRIGGER media_artifacts_added AFTER INSERT ON media_artifacts
  FOR EACH ROW EXECUTE FUNCTION media_artifacts_added();
