import SuplashDomain
import SuplashSQL

/// Sessions and refresh-token rotation (spec: auth). The refresh token and its session are
/// read with `FOR UPDATE OF t, s` on PostgreSQL: of two concurrent presentations of one
/// token — on any instances — the second waits, then reads `used_at` set and revokes the
/// family, exactly as SQLite's serialised writer does.
extension SessionRepository where Self: SQLStore {
    public func createSession(_ session: NewSession) throws {
        try transaction { tx in try SessionStatements.insert(tx.connection, session) }
    }

    public func rotateRefreshToken(hash: [UInt8], newHash: [UInt8], now: Int64, newExpiresAt: Int64) throws -> RefreshOutcome {
        try transaction { tx in
            guard let row = try tx.queryOne(SessionSQL.lockToken, [.blob(hash)]) else { return .unknown }
            let sessionID = row["session_id"].text ?? ""
            let userID = row["user_id"].text ?? ""
            switch RefreshTokenRules.verdict(
                sessionRevoked: !row["revoked_at"].isNull, tokenUsed: !row["used_at"].isNull,
                expiresAt: row["expires_at"].int64 ?? 0, now: now)
            {
            case .revoked:
                return .revoked
            case .reused:
                try tx.execute(SessionSQL.revokeReused, [.integer(now), .text(sessionID)])
                try DeviceStatements.removeTokens(tx, sessionID: sessionID)
                tx.announce(.session(id: sessionID))
                return .reused(sessionID: sessionID, userID: userID)
            case .expired:
                return .expired
            case .rotate:
                break
            }
            try tx.execute(SessionSQL.spendToken, [.integer(now), .blob(hash)])
            try tx.execute(SessionSQL.insertToken, [.blob(newHash), .text(sessionID), .integer(now), .integer(newExpiresAt)])
            return .rotated(sessionID: sessionID, userID: userID)
        }
    }

    public func revokeSession(refreshTokenHash hash: [UInt8], now: Int64) throws -> String? {
        try transaction { tx in
            guard let sessionID = try tx.queryOne(SessionSQL.sessionOfToken, [.blob(hash)])?["session_id"].text else {
                return nil
            }
            try tx.execute(SessionSQL.logout, [.integer(now), .text(sessionID)])
            try DeviceStatements.removeTokens(tx, sessionID: sessionID)
            tx.announce(.session(id: sessionID))
            return sessionID
        }
    }

    @discardableResult
    public func revokeSession(id: String, userID: String, now: Int64) throws -> Bool {
        try transaction { tx in
            guard try tx.queryOne(SessionSQL.sessionOfUser, [.text(id), .text(userID)]) != nil else { return false }
            try tx.execute(SessionSQL.logout, [.integer(now), .text(id)])
            try DeviceStatements.removeTokens(tx, sessionID: id)
            tx.announce(.session(id: id))
            return true
        }
    }

    public func sessionsRevoked(since: Int64) throws -> [String] {
        try reading { c in
            try c.query(SessionSQL.revokedSince, [.integer(since)]).compactMap { $0["id"].text }
        }
    }
}

/// Session statements other use cases run inside their own transactions (sign-up, Sign in
/// with Apple).
public enum SessionStatements {
    /// Inserts `session` and its first refresh token on `connection`, the connection of an
    /// open write transaction (two statements, two round trips on PostgreSQL).
    /// - Throws: the engine's error (a duplicate id or token hash violates a unique index).
    public static func insert(_ connection: some SQLExecutor, _ session: NewSession) throws {
        try connection.execute(SessionSQL.insertSession, [.text(session.id), .text(session.userID), .integer(session.createdAt)])
        try connection.execute(
            SessionSQL.insertToken,
            [
                .blob(session.refreshTokenHash), .text(session.id), .integer(session.createdAt),
                .integer(session.refreshExpiresAt),
            ])
    }
}

enum SessionSQL {
    static let insertSession = SQLText("INSERT INTO sessions (id, user_id, created_at) VALUES (?1, ?2, ?3)")
    static let insertToken = SQLText(
        "INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)")
    static let lockToken = SQLText { dialect in
        """
        SELECT t.session_id, t.expires_at, t.used_at, s.user_id, s.revoked_at
        FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
        WHERE t.token_hash = ?1
        \(dialect.forUpdate(of: ["t", "s"]))
        """
    }
    static let revokeReused = SQLText(
        "UPDATE sessions SET revoked_at = ?1, revoked_reason = 'refresh_token_reused' WHERE id = ?2")
    static let spendToken = SQLText("UPDATE refresh_tokens SET used_at = ?1 WHERE token_hash = ?2")
    static let sessionOfToken = SQLText("SELECT session_id FROM refresh_tokens WHERE token_hash = ?1")
    static let logout = SQLText(
        "UPDATE sessions SET revoked_at = ?1, revoked_reason = 'logout' WHERE id = ?2 AND revoked_at IS NULL")
    static let sessionOfUser = SQLText("SELECT 1 FROM sessions WHERE id = ?1 AND user_id = ?2")
    static let revokedSince = SQLText("SELECT id FROM sessions WHERE revoked_at >= ?1")
}
