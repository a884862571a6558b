-- System administration: database snapshots (src/system/backups.ts). One row per snapshot file in
-- DATA_DIR/backups/ kept by the retention; the row goes with its file.
CREATE TABLE system_backups (
  id TEXT PRIMARY KEY,
  file_name TEXT NOT NULL UNIQUE,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  integrity TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX system_backups_created ON system_backups(created_at);
