-- Attempt limits (src/auth/ratelimit.ts) in the database: each row is one attempt that counts against a
-- limit: reserved before the expensive check (scrypt, TOTP, token lookup) and kept when it failed, or
-- deleted when the outcome releases or clears it. Shared by every process on the database file and kept
-- across restarts. key_hash: SHA-256 of the limited key (an e-mail address, a client address, a client
-- id, a user id), never the key itself. Rows past expires_at_ms are pruned.
CREATE TABLE attempt_limits (
  id INTEGER PRIMARY KEY,
  bucket TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX attempt_limits_key ON attempt_limits(bucket, key_hash, at_ms);
CREATE INDEX attempt_limits_expires ON attempt_limits(expires_at_ms);
