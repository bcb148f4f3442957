import SuplashDomain
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: SessionRepository {
    static func insertSession(_ c: SQLiteConnection, _ s: NewSession) throws {
        _ = try c.run("INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ?)",
                      [.text(s.id), .text(s.userID), .integer(s.createdAt)])
        _ = try c.run("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                      [.blob(s.refreshTokenHash), .text(s.id), .integer(s.createdAt), .integer(s.refreshExpiresAt)])
    }

    public func createSession(_ session: NewSession) throws {
        try write { ctx in try SQLiteStore.insertSession(ctx.connection, session) }
    }

    public func rotateRefreshToken(hash: [UInt8], newHash: [UInt8], now: Int64, newExpiresAt: Int64) throws -> RefreshOutcome {
        try write { ctx in
            let c = ctx.connection
            guard let row = try c.query("""
                SELECT t.session_id, t.expires_at, t.used_at, s.user_id, s.revoked_at
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
                WHERE t.token_hash = ?
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
                _ = try c.run("UPDATE sessions SET revoked_at = ?, revoked_reason = 'refresh_token_reused' WHERE id = ?",
                              [.integer(now), .text(sessionID)])
                return .reused(sessionID: sessionID, userID: userID)
            case .expired:
                return .expired
            case .rotate:
                break
            }
            _ = try c.run("UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ?", [.integer(now), .blob(hash)])
            _ = try c.run("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                          [.blob(newHash), .text(sessionID), .integer(now), .integer(newExpiresAt)])
            return .rotated(sessionID: sessionID, userID: userID)
        }
    }

    public func revokeSession(refreshTokenHash hash: [UInt8], now: Int64) throws -> String? {
        try write { ctx in
            let c = ctx.connection
            guard let sessionID = try c.query("SELECT session_id FROM refresh_tokens WHERE token_hash = ?",
                                              [.blob(hash)]).first?["session_id"].text else {
                return nil
            }
            _ = try c.run("UPDATE sessions SET revoked_at = ?, revoked_reason = 'logout' WHERE id = ? AND revoked_at IS NULL",
                          [.integer(now), .text(sessionID)])
            return sessionID
        }
    }

    @discardableResult
    public func revokeSession(id: String, userID: String, now: Int64) throws -> Bool {
        try write { ctx in
            let c = ctx.connection
            let found = try c.query("SELECT 1 FROM sessions WHERE id = ? AND user_id = ?", [.text(id), .text(userID)])
            guard !found.isEmpty else { return false }
            _ = try c.run("UPDATE sessions SET revoked_at = ?, revoked_reason = 'logout' WHERE id = ? AND revoked_at IS NULL",
                          [.integer(now), .text(id)])
            return true
        }
    }

    public func sessionsRevoked(since: Int64) throws -> [String] {
        try read { c in
            try c.query("SELECT id FROM sessions WHERE revoked_at >= ?", [.integer(since)]).compactMap { $0["id"].text }
        }
    }
}
