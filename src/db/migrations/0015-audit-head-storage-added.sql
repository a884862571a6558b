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
