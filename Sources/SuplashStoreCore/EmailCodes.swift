import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Emailed codes (spec §3, email verification and password reset): a code and the message
/// that carries it are committed together (the message goes into the outbox,
/// `OutboxSQL.queue`). The code row is read with `FOR UPDATE` on PostgreSQL, so two
/// instances issuing or redeeming one user's code run one after the other, as SQLite's single
/// writer runs them.
extension EmailCodeRepository where Self: SQLStore {
    public func issueCode(_ code: NewEmailCode, message: OutboxMessage, minIntervalMs: Int64) throws -> CodeIssueOutcome {
        try transaction { tx in
            guard try tx.queryOne(EmailCodeSQL.userExists, [.text(code.userID)]) != nil else { return .noSuchUser }
            return try EmailCodeSQL.store(tx, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func issueCode(
        email: String, purpose: EmailCodePurpose, now: Int64, minIntervalMs: Int64,
        make: @escaping @Sendable (StoredUser) -> (NewEmailCode, OutboxMessage)
    ) throws -> CodeIssueOutcome {
        try transaction { tx in
            guard let row = try tx.queryOne(EmailCodeSQL.userByEmail, [.text(email)]) else { return .noSuchUser }
            let (code, message) = make(StoreRows.user(row))
            return try EmailCodeSQL.store(tx, code, message: message, minIntervalMs: minIntervalMs)
        }
    }

    public func redeemCode(
        userID: String, purpose: EmailCodePurpose, now: Int64, maxAttempts: Int,
        matches: @escaping @Sendable ([UInt8]) -> Bool,
        redemption: CodeRedemption
    ) throws -> CodeCheckOutcome {
        try transaction { tx in
            let key: [SQLValue] = [.text(userID), .text(purpose.rawValue)]
            guard let row = try tx.queryOne(EmailCodeSQL.lockCode, key), let stored = row["code_hash"].bytes else {
                return .noCode
            }
            let verdict = EmailCodeRules.verdict(
                expiresAt: row["expires_at"].int64 ?? 0, attempts: Int(row["attempts"].int64 ?? 0), now: now,
                maxAttempts: maxAttempts, matches: { matches(stored) })
            switch verdict {
            case .wrong(let attemptsLeft) where attemptsLeft > 0: try tx.execute(EmailCodeSQL.countAttempt, key)
            default: try tx.execute(EmailCodeSQL.delete, key)
            }
            switch verdict {
            case .expired: return .expired
            case .attemptsExhausted: return .attemptsExhausted
            case .wrong(let attemptsLeft): return .wrong(attemptsLeft: attemptsLeft)
            case .redeem: break
            }
            // Either purpose proves the mailbox: mark the email verified (a profile write).
            if try tx.queryOne(EmailCodeSQL.lockUnverified, [.text(userID)]) != nil {
                let position = try tx.changePosition(of: .user(userID), userID: userID)
                try tx.execute(EmailCodeSQL.markVerified, [.integer(now), .integer(position), .text(userID)])
            }
            guard case .resetPassword(let hash) = redemption else { return .redeemed(revokedSessionIDs: []) }
            try tx.execute(EmailCodeSQL.setPassword, [.text(hash), .text(userID)])
            let revoked = try tx.query(EmailCodeSQL.revokeSessions, [.integer(now), .text(userID)]).compactMap {
                $0["id"].text
            }
            // Every instance's revocation view: the sessions, and the route's per-user cut-off.
            for id in revoked { tx.announce(.session(id: id)) }
            try DeviceStatements.removeTokensOfRevokedSessions(tx, userID: userID)
            tx.announce(.userCutoff(userID: userID, issuedBeforeSeconds: now / 1000))
            return .redeemed(revokedSessionIDs: revoked)
        }
    }
}

enum EmailCodeSQL {
    static let userExists = SQLText("SELECT 1 FROM users WHERE id = ?1")
    /// `FOR KEY SHARE` on PostgreSQL: the user cannot be erased under the code being issued.
    static let userByEmail = SQLText { d in
        "SELECT \(StoreRows.userColumns) FROM users WHERE email = ?1 \(d == .postgres ? "FOR KEY SHARE" : "")"
    }
    static let lockPrevious = SQLText { d in
        "SELECT created_at FROM email_codes WHERE user_id = ?1 AND purpose = ?2 \(d.forUpdate())"
    }
    static let replace = SQLText(
        """
        UPDATE email_codes SET code_hash = ?3, created_at = ?4, expires_at = ?5, attempts = 0
        WHERE user_id = ?1 AND purpose = ?2
        """)
    static let insert = SQLText(
        """
        INSERT INTO email_codes (user_id, purpose, code_hash, created_at, expires_at, attempts)
        VALUES (?1, ?2, ?3, ?4, ?5, 0)
        """)
    static let lockCode = SQLText { d in
        "SELECT code_hash, expires_at, attempts FROM email_codes WHERE user_id = ?1 AND purpose = ?2 \(d.forUpdate())"
    }
    static let countAttempt = SQLText("UPDATE email_codes SET attempts = attempts + 1 WHERE user_id = ?1 AND purpose = ?2")
    static let delete = SQLText("DELETE FROM email_codes WHERE user_id = ?1 AND purpose = ?2")
    static let lockUnverified = SQLText { d in "SELECT 1 FROM users WHERE id = ?1 AND email_verified = 0 \(d.forUpdate())" }
    static let markVerified = SQLText { d in
        """
        UPDATE users SET email_verified = 1, version = version + 1, updated_at = ?1, change_position = ?2,
            lww_at = \(d == .postgres ? "GREATEST" : "max")(?1, lww_at + 1), lww_device = ''
        WHERE id = ?3
        """
    }
    static let setPassword = SQLText("UPDATE users SET password_hash = ?1 WHERE id = ?2")
    static let revokeSessions = SQLText(
        """
        UPDATE sessions SET revoked_at = ?1, revoked_reason = 'password_reset'
        WHERE user_id = ?2 AND revoked_at IS NULL RETURNING id
        """)

    /// Stores `code` (replacing the user's earlier code of its purpose) and queues `message`,
    /// unless the earlier code is younger than `minIntervalMs`. No `ON CONFLICT` on the first
    /// code: a concurrent first issue (another instance) makes the insert fail, the transaction
    /// is re-run and sees that code (→ `.tooSoon`).
    static func store(
        _ tx: some StoreTransaction, _ code: NewEmailCode, message: OutboxMessage, minIntervalMs: Int64
    ) throws -> CodeIssueOutcome {
        let key: [SQLValue] = [.text(code.userID), .text(code.purpose.rawValue)]
        let previous = try tx.queryOne(lockPrevious, key)?["created_at"].int64
        if let wait = EmailCodeRules.resendWait(previousCreatedAt: previous, minIntervalMs: minIntervalMs, now: code.createdAt) {
            return .tooSoon(retryAfterMs: wait)
        }
        try tx.execute(
            previous == nil ? insert : replace,
            key + [.blob(code.codeHash), .integer(code.createdAt), .integer(code.expiresAt)])
        try OutboxSQL.queue(tx, message, expiresAt: code.expiresAt)
        return .issued
    }
}
