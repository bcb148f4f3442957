import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreRows

extension PostgresStore: EmailCodeRepository {
    /// Inserts or replaces the code and enqueues its message (inside the caller's transaction).
    static func storeCode(
        _ c: PostgresConnection, _ code: NewEmailCode, message: OutboxMessage,
        minIntervalMs: Int64
    ) throws -> CodeIssueOutcome {
        let previous = try c.query(
            "SELECT created_at FROM email_codes WHERE user_id = $1 AND purpose = $2 FOR UPDATE",
            [.text(code.userID), .text(code.purpose.rawValue)]
        ).first?["created_at"].int64
        if let wait = EmailCodeRules.resendWait(
            previousCreatedAt: previous, minIntervalMs: minIntervalMs,
            now: code.createdAt)
        {
            return .tooSoon(retryAfterMs: wait)
        }
        if previous != nil {
            try c.update(
                """
                UPDATE email_codes SET code_hash = $3, created_at = $4, expires_at = $5, attempts = 0
                WHERE user_id = $1 AND purpose = $2
                """,
                [
                    .text(code.userID), .text(code.purpose.rawValue), .blob(code.codeHash), .integer(code.createdAt),
                    .integer(code.expiresAt),
                ])
        } else {
            // No ON CONFLICT: a concurrent first issue (another instance) makes this insert
            // fail, the transaction is re-run and sees that code (→ `.tooSoon`).
            try c.update(
                """
                INSERT INTO email_codes (user_id, purpose, code_hash, created_at, expires_at, attempts)
                VALUES ($1, $2, $3, $4, $5, 0)
                """,
                [
                    .text(code.userID), .text(code.purpose.rawValue), .blob(code.codeHash), .integer(code.createdAt),
                    .integer(code.expiresAt),
                ])
        }
        try insertOutbox(c, message)
        return .issued
    }

    static func insertOutbox(_ c: PostgresConnection, _ m: OutboxMessage) throws {
        try c.update(
            """
            INSERT INTO outbox (id, recipient, subject, body, created_at, attempts, next_attempt_at) VALUES ($1, $2, $3, $4, $5, 0, $6)
            """, [.text(m.id), .text(m.recipient), .text(m.subject), .text(m.text), .integer(m.createdAt), .integer(m.createdAt)])
    }

    public func issueCode(_ code: NewEmailCode, message: OutboxMessage, minIntervalMs: Int64) throws -> CodeIssueOutcome {
        try write { tx in
            let exists = try tx.connection.query("SELECT 1 FROM users WHERE id = $1", [.text(code.userID)])
            guard !exists.isEmpty else { return .noSuchUser }
            return try PostgresStore.storeCode(tx.connection, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func issueCode(
        email: String, purpose: EmailCodePurpose, now: Int64, minIntervalMs: Int64,
        make: @escaping @Sendable (StoredUser) -> (NewEmailCode, OutboxMessage)
    ) throws -> CodeIssueOutcome {
        try write { tx in
            let c = tx.connection
            guard let row = try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = $1 FOR KEY SHARE", [.text(email)]).first
            else { return .noSuchUser }
            let (code, message) = make(StoreRows.user(row))
            return try PostgresStore.storeCode(c, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func redeemCode(
        userID: String, purpose: EmailCodePurpose, now: Int64, maxAttempts: Int,
        matches: @escaping @Sendable ([UInt8]) -> Bool,
        redemption: CodeRedemption
    ) throws -> CodeCheckOutcome {
        try write { tx in
            let c = tx.connection
            let key: [SQLValue] = [.text(userID), .text(purpose.rawValue)]
            guard
                let row = try c.query(
                    "SELECT code_hash, expires_at, attempts FROM email_codes WHERE user_id = $1 AND purpose = $2 FOR UPDATE",
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
                try c.update("UPDATE email_codes SET attempts = attempts + 1 WHERE user_id = $1 AND purpose = $2", key)
            default:
                try c.update("DELETE FROM email_codes WHERE user_id = $1 AND purpose = $2", key)
            }
            switch verdict {
            case .expired: return .expired
            case .attemptsExhausted: return .attemptsExhausted
            case .wrong(let attemptsLeft): return .wrong(attemptsLeft: attemptsLeft)
            case .redeem: break
            }
            // Either purpose proves the mailbox: mark the email verified (a profile write).
            let unverified = try c.query(
                "SELECT 1 FROM users WHERE id = $1 AND email_verified = 0 FOR UPDATE",
                [.text(userID)])
            if !unverified.isEmpty {
                let position = try self.changePosition(tx, userID: userID, row: ChangeRows.user(userID))
                try c.update(
                    """
                    UPDATE users SET email_verified = 1, version = version + 1, updated_at = $1, change_position = $2,
                        lww_at = GREATEST($1, lww_at + 1), lww_device = ''
                    WHERE id = $3
                    """, [.integer(now), .integer(position), .text(userID)])
            }
            switch redemption {
            case .verifyEmail:
                return .redeemed(revokedSessionIDs: [])
            case .resetPassword(let hash):
                try c.update("UPDATE users SET password_hash = $1 WHERE id = $2", [.text(hash), .text(userID)])
                let revoked = try c.query(
                    """
                    UPDATE sessions SET revoked_at = $1, revoked_reason = 'password_reset'
                    WHERE user_id = $2 AND revoked_at IS NULL RETURNING id
                    """, [.integer(now), .text(userID)]
                ).compactMap { $0["id"].text }
                // Every instance's revocation view: the sessions, and the route's per-user cut-off.
                for id in revoked { try self.publish(tx, .session(id: id)) }
                try self.publish(tx, .userCutoff(userID: userID, issuedBeforeSeconds: now / 1000))
                return .redeemed(revokedSessionIDs: revoked)
            }
        }
    }
}

/// The mail outbox, shared by the delivery workers of every instance: each claims its
/// messages with `FOR UPDATE SKIP LOCKED` (`claimDueMessages`), so two instances never
/// attempt one message at the same time; the provider still deduplicates by message id
/// (its Idempotency-Key) when a worker dies between sending and recording.
extension PostgresStore: OutboxRepository {
    /// Claims due messages in one statement: locks up to `limit` due rows, skipping rows
    /// another worker has locked (`FOR UPDATE SKIP LOCKED`, docs "The Locking Clause"), and
    /// moves their `next_attempt_at` to `now + leaseMs`. Under READ COMMITTED a row that a
    /// concurrent claim updated and committed is re-checked against the `WHERE` clause
    /// before it is locked, and is no longer due — so concurrent claims get disjoint rows.
    /// `markDelivered` / `markAttemptFailed` then end the lease.
    public func claimDueMessages(now: Int64, limit: Int, leaseMs: Int64) throws -> [OutboxMessage] {
        try write { tx in
            try tx.connection.query(
                """
                UPDATE outbox SET next_attempt_at = $2
                WHERE id IN (
                    SELECT id FROM outbox
                    WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1
                    ORDER BY next_attempt_at, created_at LIMIT $3
                    FOR UPDATE SKIP LOCKED)
                RETURNING id, recipient, subject, body, created_at, attempts
                """, [.integer(now), .integer(now + max(0, leaseMs)), .integer(Int64(limit))]
            ).map { row in
                OutboxMessage(
                    id: row["id"].text ?? "", recipient: row["recipient"].text ?? "",
                    subject: row["subject"].text ?? "", text: row["body"].text ?? "",
                    createdAt: row["created_at"].int64 ?? 0, attempts: Int(row["attempts"].int64 ?? 0))
            }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    public func dueMessages(now: Int64, limit: Int) throws -> [OutboxMessage] {
        try read { c in
            try c.query(
                """
                SELECT id, recipient, subject, body, created_at, attempts FROM outbox
                WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1
                ORDER BY next_attempt_at, created_at LIMIT $2
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
        _ = try write { tx in
            try tx.connection.update(
                "UPDATE outbox SET delivered_at = $1, body = '' WHERE id = $2 AND delivered_at IS NULL",
                [.integer(now), .text(id)])
        }
    }

    public func markAttemptFailed(
        id: String, attempts: Int, nextAttemptAt: Int64, abandon: Bool, errorKind: String,
        now: Int64
    ) throws {
        _ = try write { tx in
            if abandon {
                try tx.connection.update(
                    """
                    UPDATE outbox SET attempts = $1, failed_at = $2, last_error = $3, body = '' WHERE id = $4 AND delivered_at IS NULL
                    """, [.integer(Int64(attempts)), .integer(now), .text(errorKind), .text(id)])
            } else {
                try tx.connection.update(
                    """
                    UPDATE outbox SET attempts = $1, next_attempt_at = $2, last_error = $3 WHERE id = $4 AND delivered_at IS NULL
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
