import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// A user's data (spec: account, "Export" and "Erasure"): the export reads every part in one
/// snapshot, so the parts agree; the erasure deletes every row of the user in one transaction
/// (the user's row read `FOR UPDATE` on PostgreSQL), keeps the erased id for a day so every
/// instance's revocation view refuses its tokens (`accountsErased`), and announces it
/// (`StoreRevocation.accountErased`).
extension AccountDataRepository where Self: SQLStore {
    public func exportAccount(userID: String) throws -> AccountExport? {
        try snapshot { c in
            let u: [SQLValue] = [.text(userID)]
            guard let profile = try c.queryOne(AccountSQL.profile, u).map({ StoreRows.user($0).profile }) else { return nil }
            let entries = try c.query(AccountSQL.entries, u).map(StoreRows.entry)
            let bills = try c.query(AccountSQL.bills, u).map(StoreRows.bill)
            let apple = try c.query(AccountSQL.appleIdentities, u).map { row in
                LinkedAppleIdentity(
                    sub: row["sub"].text ?? "", clientID: row["client_id"].text, linkedAt: row["created_at"].int64 ?? 0,
                    refreshTokenKept: (row["kept"].int64 ?? 0) != 0)
            }
            return AccountExport(
                profile: profile, entries: entries, days: try c.query(AccountSQL.days, u).map(StoreRows.day), bills: bills,
                achievements: try c.queryOne(AccountSQL.achievements, u).map(StoreRows.achievements) ?? Achievements(),
                appleIdentities: apple)
        }
    }

    /// Also queues a revoke job for each Apple refresh token the account kept (docs/apple.md).
    public func eraseAccount(userID: String, now: Int64) throws -> Bool {
        try transaction { tx in try AccountErasure.erase(tx, userID: userID, now: now, revokeAtApple: true) }
    }

    public func accountsErased(since: Int64) throws -> [String] {
        try reading { c in try c.query(AccountSQL.erasedSince, [.integer(since)]).compactMap { $0["user_id"].text } }
    }
}

/// The erasure's statements, for the use cases that erase inside their own transaction (the
/// erase route, Apple's `account-delete` event).
public enum AccountErasure {
    /// Deletes every row of `userID` (read `FOR UPDATE` first), records the erased id and
    /// announces it. With `revokeAtApple`, each Apple refresh token the account kept becomes a
    /// revoke job (`apple_revoke_jobs`, id `<now>.<sub>`, due at once) in the same
    /// transaction — one statement whether or not there is one.
    /// - Returns: false when the user does not exist.
    /// - Throws: the engine's error.
    public static func erase(_ tx: some StoreTransaction, userID: String, now: Int64, revokeAtApple: Bool) throws -> Bool {
        let u: [SQLValue] = [.text(userID)]
        guard try tx.queryOne(AccountSQL.lockUser, u) != nil else { return false }
        if revokeAtApple { try tx.execute(AccountSQL.queueRevokeJobs, [.text(userID), .integer(now), .text(String(now))]) }
        try tx.execute(AccountSQL.deleteRefreshTokens, u)
        for delete in AccountSQL.deleteOwnedRows { try tx.execute(delete, u) }
        try tx.execute(AccountSQL.deleteUser, u)
        try tx.execute(AccountSQL.purgeErased, [.integer(now - AccountSQL.erasedRetentionMillis)])
        try tx.execute(AccountSQL.recordErased, [.text(userID), .integer(now)])
        tx.announce(.accountErased(userID: userID))
        return true
    }
}

enum AccountSQL {
    /// How long an erased id is kept for the revocation view (1 day, ms; access tokens live
    /// ≤ 1 h by default).
    static let erasedRetentionMillis: Int64 = 86_400_000

    static let profile = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE id = ?1")
    static let entries = SQLText(
        "SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = ?1 AND deleted = 0 ORDER BY logged_at, id")
    static let bills = SQLText(
        "SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ?1 AND deleted = 0 ORDER BY period DESC, id DESC")
    static let days = SQLText("SELECT \(StoreRows.dayColumns) FROM days WHERE user_id = ?1 ORDER BY local_date")
    static let achievements = SQLText("SELECT \(StoreRows.achievementsColumns) FROM achievements WHERE user_id = ?1")

    /// Never the sealed token: only whether one is kept.
    static let appleIdentities = SQLText(
        """
        SELECT sub, client_id, created_at, CASE WHEN refresh_token IS NULL THEN 0 ELSE 1 END AS kept
        FROM apple_identities WHERE user_id = ?1 ORDER BY created_at, sub
        """)
    static let lockUser = SQLText { d in "SELECT 1 FROM users WHERE id = ?1 \(d.forUpdate())" }
    static let deleteRefreshTokens = SQLText(
        "DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = ?1)")
    /// The user's rows in every table that references the user, children first.
    static let deleteOwnedRows = [
        "sessions", "water_entries", "days", "daily_totals", "bills", "achievements", "drinking_hours", "reminders",
        "entry_amounts",
    ].map {
        SQLText("DELETE FROM \($0) WHERE user_id = ?1")
    }
    static let deleteUser = SQLText("DELETE FROM users WHERE id = ?1")
    /// The account's Apple refresh tokens as revoke jobs; the envelope moves unchanged (it stays
    /// bound to its `sub`).
    static let queueRevokeJobs = SQLText(
        """
        INSERT INTO apple_revoke_jobs (id, sub, client_id, refresh_token, created_at, attempts, next_attempt_at)
        SELECT CAST(?3 AS TEXT) || '.' || sub, sub, client_id, refresh_token, ?2, 0, ?2 FROM apple_identities
        WHERE user_id = ?1 AND refresh_token IS NOT NULL AND client_id IS NOT NULL
        """)
    static let purgeErased = SQLText("DELETE FROM erased_accounts WHERE erased_at < ?1")
    static let recordErased = SQLText(
        """
        INSERT INTO erased_accounts (user_id, erased_at) VALUES (?1, ?2)
        ON CONFLICT (user_id) DO UPDATE SET erased_at = excluded.erased_at
        """)
    static let erasedSince = SQLText("SELECT user_id FROM erased_accounts WHERE erased_at >= ?1")
}
