-- Suplash Sync, PostgreSQL schema v7 (mirrors Migrations/sqlite/0007_server_secrets.sql):
-- secrets every server instance must share, so that several instances on one database
-- accept each other's tokens (issue 8). Row `jwt`: the token-signing secret, stored by
-- the first instance that starts without `auth.jwtSecret` (its data dir's `jwt-secret` if
-- it has one, else random bytes); every instance then reads it. Version 0006 belongs to
-- parallel work.
CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    secret     BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
