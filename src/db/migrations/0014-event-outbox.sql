-- Events (src/directory/events.ts): one row per event and subscriber, written in the emitting
-- transaction and marked done in the transaction of its handler. Rows with done_at NULL are pending:
-- dispatched after the emitting commit, and again at server start when a crash or a failing handler
-- left them (attempts counts tries; last_error keeps the latest failure's message). Payloads are ids
-- and plain values, never secrets.
CREATE TABLE event_outbox (
  id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  subscriber TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  done_at TEXT
);
CREATE INDEX event_outbox_pending ON event_outbox(created_at, id) WHERE done_at IS NULL;
