-- Suplash Sync, schema v7: secrets every server instance must share (issue 8). Used by
-- PostgreSQL deployments, where several instances share one database (see
-- Migrations/postgres/0007_server_secrets.sql); a SQLite deployment is one instance and
-- keeps its token-signing secret in the data dir's `jwt-secret` file, so this table stays
-- empty there. Kept so that both schemas have the same tables. Version 0006 belongs to
-- parallel work.
CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    secret     BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
