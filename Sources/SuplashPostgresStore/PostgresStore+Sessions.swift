import SuplashDomain
import SuplashPostgres
import SuplashStoreRows

extension PostgresStore: SessionRepository {
    static func insertSession(_ c: PostgresConnection, _ s: NewSession) throws {
        try c.update("INSERT INTO sessions (id, user_id, created_at) VALUES ($1, $2, $3)",
                     [.text(s.id), .text(s.userID), .integer(s.createdAt)])
        try c.update("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
                     [.blob(s.refreshTokenHash), .text(s.id), .integer(s.createdAt), .integer(s.refreshExpiresAt)])
    }

    public func createSession(_ session: NewSession) throws {
        try write { tx in try PostgresStore.insertSession(tx.connection, session) }
    }

    /// Locks the token and its session (`FOR UPDATE`): of two concurrent presentations of
    /// one token — on any instances — the second waits, then reads `used_at` set and
    /// revokes the family, exactly as the serialised SQLite writer does.
    public func rotateRefreshToken(hash: [UInt8], newHash: [UInt8], now: Int64, newExpiresAt: Int64) throws -> RefreshOutcome {
        try write { tx in
            let c = tx.connection
            guard let row = try c.query("""
                SELECT t.session_id, t.expires_at, t.used_at, s.user_id, s.revoked_at
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
                WHERE t.token_hash = $1
                FOR UPDATE OF t, s
                """, [.blob(hash)]).first else {
                return .unknown
            }
            let sessionID = row["session_id"].text ?? ""
            let userID = row["user_id"].text ?? ""
            switch RefreshTokenRules.verdict(sessionRevoked: !row["revoked_at"].isNull, tokenUsed: !row["used_at"].isNull,
                                             expiresAt: row["expires_at"].int64 ?? 0, now: now) {
            case .revoked:
                return .revoked
            case .reused:
                try c.update("UPDATE sessions SET revoked_at = $1, revoked_reason = 'refresh_token_reused' WHERE id = $2",
                             [.integer(now), .text(sessionID)])
                try self.publish(tx, .session(id: sessionID))
                return .reused(sessionID: sessionID, userID: userID)
            case .expired:
                return .expired
            case .rotate:
                break
            }
            try c.update("UPDATE refresh_tokens SET used_at = $1 WHERE token_hash = $2", [.integer(now), .blob(hash)])
            try c.update("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
                         [.blob(newHash), .text(sessionID), .integer(now), .integer(newExpiresAt)])
            return .rotated(sessionID: sessionID, userID: userID)
        }
    }

    public func revokeSession(refreshTokenHash hash: [UInt8], now: Int64) throws -> String? {
        try write { tx in
            let c = tx.connection
            guard let sessionID = try c.query("SELECT session_id FROM refresh_tokens WHERE token_hash = $1",
                                              [.blob(hash)]).first?["session_id"].text else {
                return nil
            }
            try c.update("UPDATE sessions SET revoked_at = $1, revoked_reason = 'logout' WHERE id = $2 AND revoked_at IS NULL",
                         [.integer(now), .text(sessionID)])
            try self.publish(tx, .session(id: sessionID))
            return sessionID
        }
    }

    @discardableResult
    public func revokeSession(id: String, userID: String, now: Int64) throws -> Bool {
        try write { tx in
            let c = tx.connection
            guard !(try c.query("SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2", [.text(id), .text(userID)])).isEmpty
            else { return false }
            try c.update("UPDATE sessions SET revoked_at = $1, revoked_reason = 'logout' WHERE id = $2 AND revoked_at IS NULL",
                         [.integer(now), .text(id)])
            try self.publish(tx, .session(id: id))
            return true
        }
    }

    public func sessionsRevoked(since: Int64) throws -> [String] {
        try read { c in
            try c.query("SELECT id FROM sessions WHERE revoked_at >= $1", [.integer(since)]).compactMap { $0["id"].text }
        }
    }
}

extension PostgresStore: AdminKeyRepository {
    public func createAdminKey(name: String, keyHash: [UInt8], now: Int64) throws {
        try write { tx in
            let c = tx.connection
            if !(try c.query("SELECT 1 FROM admin_keys WHERE name = $1", [.text(name)])).isEmpty {
                throw RepositoryError.conflict(code: "admin_key_exists")
            }
            try c.update("INSERT INTO admin_keys (name, key_hash, created_at) VALUES ($1, $2, $3)",
                         [.text(name), .blob(keyHash), .integer(now)])
            try self.publish(tx, .adminKeys)
        }
    }

    public func adminKeys() throws -> [AdminKeyRecord] {
        try read { c in
            try c.query("SELECT name, created_at, revoked_at FROM admin_keys ORDER BY created_at, name").map {
                AdminKeyRecord(name: $0["name"].text ?? "", createdAt: $0["created_at"].int64 ?? 0,
                               revokedAt: $0["revoked_at"].int64)
            }
        }
    }

    public func revokeAdminKey(name: String, now: Int64) throws -> Bool {
        try write { tx in
            let revoked = try tx.connection.update("UPDATE admin_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
                                                   [.integer(now), .text(name)]) > 0
            if revoked { try self.publish(tx, .adminKeys) }
            return revoked
        }
    }

    public func activeAdminKeyHashes() throws -> [(hash: [UInt8], name: String)] {
        try read { c in
            try c.query("SELECT name, key_hash FROM admin_keys WHERE revoked_at IS NULL").compactMap { row in
                guard let hash = row["key_hash"].bytes, let name = row["name"].text else { return nil }
                return (hash, name)
            }
        }
    }
}
