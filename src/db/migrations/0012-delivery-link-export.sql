-- A client delivery link may also open the export package of its delivery (the archive and every
-- file its manifest lists): decided when the link is made (includeExport), off by default.
ALTER TABLE delivery_links ADD COLUMN allow_export INTEGER NOT NULL DEFAULT 0;
