-- Commercial operations. Money: amounts in integer minor units of the account's currency (ISO 4217
-- exponent); unit prices and usage costs in 1/10,000 of a minor unit (`_e4`), so that a price such as
-- USD 0.0125 a clip is exact. Nothing monetary is a float.

ALTER TABLE billing_accounts RENAME COLUMN seat_unit_price_minor TO seat_unit_price_e4;
ALTER TABLE billing_accounts RENAME COLUMN storage_unit_price_minor TO storage_unit_price_e4;
ALTER TABLE billing_accounts RENAME COLUMN clip_unit_price_minor TO clip_unit_price_e4;
UPDATE billing_accounts SET seat_unit_price_e4 = seat_unit_price_e4 * 10000, storage_unit_price_e4 = storage_unit_price_e4 * 10000,
  clip_unit_price_e4 = clip_unit_price_e4 * 10000;
-- Invoice numbers: prefix + the next number, assigned when an invoice is issued (gap-free per organization).
ALTER TABLE billing_accounts ADD COLUMN invoice_prefix TEXT NOT NULL DEFAULT 'INV-';
ALTER TABLE billing_accounts ADD COLUMN next_invoice_number INTEGER NOT NULL DEFAULT 1;

-- Every change of a billing account: the fields before and after (JSON) and who made it.
CREATE TABLE billing_account_events (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  actor_user_id TEXT,
  actor_name TEXT,
  changed TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX billing_account_events_org ON billing_account_events(organization_id, created_at);

-- Cost centers: one per workspace (made with it), more per organization; a budget per billing period.
CREATE TABLE cost_centers (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT UNIQUE REFERENCES workspaces(id),
  code TEXT NOT NULL,
  name TEXT NOT NULL,
  budget_minor INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, code)
);
INSERT INTO cost_centers (id, organization_id, workspace_id, code, name, budget_minor, created_at, updated_at)
  SELECT 'cc_' || substr(id, 5), organization_id, id, 'WS-' || upper(substr(id, -8)), name, NULL, created_at, created_at FROM workspaces;

-- A workspace's own limits within the organization's plan (null: only the organization's applies).
CREATE TABLE workspace_quotas (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL UNIQUE REFERENCES workspaces(id),
  monthly_clip_quota INTEGER,
  storage_gb REAL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO workspace_quotas (id, organization_id, workspace_id, monthly_clip_quota, storage_gb, created_at, updated_at)
  SELECT 'wq_' || substr(id, 5), organization_id, id, NULL, NULL, created_at, created_at FROM workspaces;

-- One notification per threshold crossing: (scope, metric, period, threshold, quota) is recorded once;
-- a changed quota can be crossed again.
CREATE TABLE quota_warnings (
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL DEFAULT '',
  metric TEXT NOT NULL CHECK (metric IN ('clips', 'storage')),
  period TEXT NOT NULL,
  threshold INTEGER NOT NULL,
  used INTEGER NOT NULL,
  quota INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (organization_id, workspace_id, metric, period, threshold, quota)
);

-- Usage events: the exact estimated cost, the cost center, and an idempotency key (the same event
-- recorded twice is stored once).
ALTER TABLE usage_events RENAME COLUMN estimated_cost_minor TO estimated_cost_e4;
UPDATE usage_events SET estimated_cost_e4 = estimated_cost_e4 * 10000;
ALTER TABLE usage_events RENAME COLUMN cost_center TO cost_center_id;
UPDATE usage_events SET cost_center_id = (SELECT c.id FROM cost_centers c WHERE c.workspace_id = usage_events.workspace_id);
ALTER TABLE usage_events ADD COLUMN event_key TEXT;
-- The unit price the event was recorded at (e4), so that invoice lines multiply out exactly.
ALTER TABLE usage_events ADD COLUMN unit_price_e4 INTEGER NOT NULL DEFAULT 0;
UPDATE usage_events SET unit_price_e4 = CAST(estimated_cost_e4 / quantity AS INTEGER) WHERE quantity > 0;
UPDATE usage_events SET event_key = kind || ':' || job_id WHERE job_id IS NOT NULL;
CREATE UNIQUE INDEX usage_events_key ON usage_events(organization_id, event_key);
-- Storage use counts generated media per organization and workspace (quotas, invoices).
CREATE INDEX media_artifacts_org ON media_artifacts(organization_id, workspace_id);
CREATE INDEX usage_events_org_workspace ON usage_events(organization_id, workspace_id, created_at);
CREATE INDEX usage_events_org_workspace_kind ON usage_events(organization_id, workspace_id, kind, created_at);
-- Clips reserved by video jobs not finished yet (quota checks count them with the month's clips).
CREATE INDEX generation_jobs_pending_video ON generation_jobs(organization_id, workspace_id) WHERE kind = 'video' AND status IN ('queued', 'running', 'blocked');
CREATE INDEX usage_events_org_project ON usage_events(organization_id, project_id, created_at);
CREATE INDEX usage_events_org_user ON usage_events(organization_id, actor_user_id, created_at);
CREATE INDEX usage_events_org_cost_center ON usage_events(organization_id, cost_center_id, created_at);
-- Covering: the usage list's totals by unit are summed from the index alone (src/commercial/usage-store.ts).
CREATE INDEX usage_events_org_unit ON usage_events(organization_id, unit, created_at, quantity, estimated_cost_e4);

-- Invoices: one per organization and period (half-open [period_start, period_end), UTC instants of the
-- organization's local midnights); a draft snapshot with its lines; numbered when issued.
CREATE TABLE invoices (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  period_start TEXT NOT NULL,
  period_end TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft', 'issued', 'paid', 'overdue', 'void')),
  number TEXT,
  currency TEXT NOT NULL,
  tax_rate TEXT NOT NULL,
  due_days INTEGER NOT NULL,
  subtotal_minor INTEGER NOT NULL,
  tax_minor INTEGER NOT NULL,
  total_minor INTEGER NOT NULL,
  snapshot TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  issued_at TEXT,
  due_at TEXT,
  paid_at TEXT,
  voided_at TEXT,
  UNIQUE (organization_id, period_start, period_end),
  UNIQUE (organization_id, number)
);
CREATE INDEX invoices_org ON invoices(organization_id, period_start);

-- A line: quantity (exact decimal text) x unit price (e4, per price unit) = amount_exact (exact decimal
-- text, minor units), rounded half-up once to amount_minor.
CREATE TABLE invoice_lines (
  invoice_id TEXT NOT NULL REFERENCES invoices(id),
  position INTEGER NOT NULL,
  kind TEXT NOT NULL,
  description TEXT NOT NULL,
  workspace_id TEXT,
  cost_center_id TEXT,
  quantity TEXT NOT NULL,
  unit TEXT NOT NULL,
  unit_price_e4 INTEGER NOT NULL,
  price_unit TEXT NOT NULL,
  amount_exact TEXT NOT NULL,
  amount_minor INTEGER NOT NULL,
  PRIMARY KEY (invoice_id, position)
);
-- An invoice's snapshot and lines never change once generated; only its status moves (and the number
-- is given once, at issue). Invoices are never deleted.
CREATE TRIGGER invoice_lines_immutable BEFORE UPDATE ON invoice_lines
BEGIN
  SELECT RAISE(ABORT, 'invoice lines are immutable');
END;
CREATE TRIGGER invoice_lines_kept BEFORE DELETE ON invoice_lines
BEGIN
  SELECT RAISE(ABORT, 'invoice lines are immutable');
END;
CREATE TRIGGER invoices_snapshot_immutable BEFORE UPDATE OF organization_id, period_start, period_end, currency, tax_rate, due_days,
  subtotal_minor, tax_minor, total_minor, snapshot, created_at ON invoices
BEGIN
  SELECT RAISE(ABORT, 'an invoice snapshot is immutable');
END;
CREATE TRIGGER invoices_number_once BEFORE UPDATE OF number ON invoices WHEN OLD.number IS NOT NULL AND NEW.number IS NOT OLD.number
BEGIN
  SELECT RAISE(ABORT, 'an invoice number is given once');
END;
CREATE TRIGGER invoices_kept BEFORE DELETE ON invoices
BEGIN
  SELECT RAISE(ABORT, 'invoices are never deleted');
END;

CREATE TABLE invoice_events (
  id TEXT PRIMARY KEY,
  invoice_id TEXT NOT NULL REFERENCES invoices(id),
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  action TEXT NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  actor_user_id TEXT,
  actor_name TEXT,
  note TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX invoice_events_invoice ON invoice_events(invoice_id, created_at);
-- Stored files are never deleted as rows (commercial/quotas.ts bounds stored bytes by rowid ranges).
CREATE TRIGGER asset_versions_no_delete BEFORE DELETE ON asset_versions
BEGIN SELECT RAISE(ABORT, 'asset_versions rows are never deleted'); END;
CREATE TRIGGER media_artifacts_no_delete BEFORE DELETE ON media_artifacts
BEGIN SELECT RAISE(ABORT, 'media_artifacts rows are never deleted'); END;
