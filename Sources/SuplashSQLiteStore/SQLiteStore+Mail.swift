import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: EmailCodeRepository {
    /// Inserts or replaces the code and enqueues its message (inside the caller's transaction).
    static func storeCode(
        _ c: SQLiteConnection, _ code: NewEmailCode, message: OutboxMessage,
        minIntervalMs: Int64
    ) throws -> CodeIssueOutcome {
        let previous = try c.query(
            "SELECT created_at FROM email_codes WHERE user_id = ? AND purpose = ?",
            [.text(code.userID), .text(code.purpose.rawValue)]
        ).first?["created_at"].int64
        if let wait = EmailCodeRules.resendWait(
            previousCreatedAt: previous, minIntervalMs: minIntervalMs,
            now: code.createdAt)
        {
            return .tooSoon(retryAfterMs: wait)
        }
        _ = try c.run(
            """
            INSERT INTO email_codes (user_id, purpose, code_hash, created_at, expires_at, attempts) VALUES (?, ?, ?, ?, ?, 0)
            ON CONFLICT (user_id, purpose) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at,
                expires_at = excluded.expires_at, attempts = 0
            """,
            [
                .text(code.userID), .text(code.purpose.rawValue), .blob(code.codeHash), .integer(code.createdAt),
                .integer(code.expiresAt),
            ])
        try insertOutbox(c, message)
        return .issued
    }

    static func insertOutbox(_ c: SQLiteConnection, _ m: OutboxMessage) throws {
        _ = try c.run(
            """
            INSERT INTO outbox (id, recipient, subject, body, created_at, attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, 0, ?)
            """, [.text(m.id), .text(m.recipient), .text(m.subject), .text(m.text), .integer(m.createdAt), .integer(m.createdAt)])
    }

    public func issueCode(_ code: NewEmailCode, message: OutboxMessage, minIntervalMs: Int64) throws -> CodeIssueOutcome {
        try write { ctx in
            let exists = try ctx.connection.query("SELECT 1 FROM users WHERE id = ?", [.text(code.userID)])
            guard !exists.isEmpty else { return .noSuchUser }
            return try SQLiteStore.storeCode(ctx.connection, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func issueCode(
        email: String, purpose: EmailCodePurpose, now: Int64, minIntervalMs: Int64,
        make: @escaping @Sendable (StoredUser) -> (NewEmailCode, OutboxMessage)
    ) throws -> CodeIssueOutcome {
        try write { ctx in
            let c = ctx.connection
            guard let row = try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = ?", [.text(email)]).first
            else { return .noSuchUser }
            let (code, message) = make(StoreRows.user(row))
            return try SQLiteStore.storeCode(c, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func redeemCode(
        userID: String, purpose: EmailCodePurpose, now: Int64, maxAttempts: Int,
        matches: @escaping @Sendable ([UInt8]) -> Bool,
        redemption: CodeRedemption
    ) throws -> CodeCheckOutcome {
        try write { ctx in
            let c = ctx.connection
            let key: [SQLValue] = [.text(userID), .text(purpose.rawValue)]
            guard
                let row = try c.query(
                    "SELECT code_hash, expires_at, attempts FROM email_codes WHERE user_id = ? AND purpose = ?",
                    key
                ).first,
                let stored = row["code_hash"].bytes
            else { return .noCode }
            let verdict = EmailCodeRules.verdict(
                expiresAt: row["expires_at"].int64 ?? 0,
                attempts: Int(row["attempts"].int64 ?? 0), now: now,
                maxAttempts: maxAttempts, matches: { matches(stored) })
            switch verdict {
            case .wrong(let attemptsLeft) where attemptsLeft > 0:
                _ = try c.run("UPDATE email_codes SET attempts = attempts + 1 WHERE user_id = ? AND purpose = ?", key)
            default:
                _ = try c.run("DELETE FROM email_codes WHERE user_id = ? AND purpose = ?", key)
            }
            switch verdict {
            case .expired: return .expired
            case .attemptsExhausted: return .attemptsExhausted
            case .wrong(let attemptsLeft): return .wrong(attemptsLeft: attemptsLeft)
            case .redeem: break
            }
            // Either purpose proves the mailbox: mark the email verified (a profile write).
            let verified = try c.run(
                """
                UPDATE users SET email_verified = 1, version = version + 1, updated_at = ?,
                    change_position = (SELECT position + 1 FROM change_sequence WHERE singleton = 1),
                    lww_at = max(?, lww_at + 1), lww_device = ''
                WHERE id = ? AND email_verified = 0
                """, [.integer(now), .integer(now), .text(userID)])
            if verified > 0 { _ = try SQLiteStore.nextChangePosition(c) }
            switch redemption {
            case .verifyEmail:
                return .redeemed(revokedSessionIDs: [])
            case .resetPassword(let hash):
                _ = try c.run("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .text(userID)])
                let revoked = try c.query(
                    """
                    UPDATE sessions SET revoked_at = ?, revoked_reason = 'password_reset'
                    WHERE user_id = ? AND revoked_at IS NULL RETURNING id
                    """, [.integer(now), .text(userID)]
                ).compactMap { $0["id"].text }
                return .redeemed(revokedSessionIDs: revoked)
            }
        }
    }
}

extension SQLiteStore: OutboxRepository {
    public func dueMessages(now: Int64, limit: Int) throws -> [OutboxMessage] {
        try read { c in
            try c.query(
                """
                SELECT id, recipient, subject, body, created_at, attempts FROM outbox
                WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
                ORDER BY next_attempt_at, created_at LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]
            ).map { row in
                OutboxMessage(
                    id: row["id"].text ?? "", recipient: row["recipient"].text ?? "",
                    subject: row["subject"].text ?? "", text: row["body"].text ?? "",
                    createdAt: row["created_at"].int64 ?? 0, attempts: Int(row["attempts"].int64 ?? 0))
            }
        }
    }

    public func nextAttemptTime() throws -> Int64? {
        try read { c in
            try c.query(
                "SELECT min(next_attempt_at) AS t FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL",
                []
            ).first?["t"].int64
        }
    }

    public func markDelivered(id: String, now: Int64) throws {
        try write { ctx in
            _ = try ctx.connection.run(
                "UPDATE outbox SET delivered_at = ?, body = '' WHERE id = ? AND delivered_at IS NULL",
                [.integer(now), .text(id)])
        }
    }

    public func markAttemptFailed(
        id: String, attempts: Int, nextAttemptAt: Int64, abandon: Bool, errorKind: String,
        now: Int64
    ) throws {
        try write { ctx in
            if abandon {
                _ = try ctx.connection.run(
                    """
                    UPDATE outbox SET attempts = ?, failed_at = ?, last_error = ?, body = '' WHERE id = ? AND delivered_at IS NULL
                    """, [.integer(Int64(attempts)), .integer(now), .text(errorKind), .text(id)])
            } else {
                _ = try ctx.connection.run(
                    """
                    UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ? AND delivered_at IS NULL
                    """, [.integer(Int64(attempts)), .integer(nextAttemptAt), .text(errorKind), .text(id)])
            }
        }
    }

    public func pendingCount() throws -> Int {
        try read { c in
            Int(
                try c.query("SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL", [])
                    .first?["n"].int64 ?? 0)
        }
    }
}
