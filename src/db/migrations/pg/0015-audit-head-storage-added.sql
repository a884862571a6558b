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
