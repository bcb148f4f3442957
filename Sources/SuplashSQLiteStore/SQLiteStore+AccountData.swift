import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreRows

extension SQLiteStore: AccountDataRepository {
    public func exportAccount(userID: String) throws -> AccountExport? {
        try read { c in
            guard let profile = try SQLiteStore.loadProfile(c, userID: userID) else { return nil }
            let entries = try c.query(
                """
                SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = ? AND deleted = 0 ORDER BY logged_at, id
                """, [.text(userID)]
            ).map(StoreRows.entry)
            let bills = try c.query(
                """
                SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = ? AND deleted = 0 ORDER BY period DESC, id DESC
                """, [.text(userID)]
            ).map(StoreRows.bill)
            return AccountExport(
                profile: profile, entries: entries, days: try SQLiteStore.loadDays(c, userID: userID),
                bills: bills, achievements: try SQLiteStore.loadAchievements(c, userID: userID))
        }
    }

    /// How long an erased id is kept for the revocation view (1 day, ms; access tokens live ≤ 1 h by default).
    static let erasedRetentionMillis: Int64 = 86_400_000

    public func eraseAccount(userID: String, now: Int64) throws -> Bool {
        try write { ctx in
            let c = ctx.connection
            guard !(try c.query("SELECT 1 FROM users WHERE id = ?", [.text(userID)])).isEmpty else { return false }
            let u: [SQLValue] = [.text(userID)]
            _ = try c.run("DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = ?)", u)
            for table in ["sessions", "water_entries", "days", "daily_totals", "bills", "achievements"] {
                _ = try c.run("DELETE FROM \(table) WHERE user_id = ?", u)
            }
            _ = try c.run("DELETE FROM users WHERE id = ?", u)
            _ = try c.run("DELETE FROM erased_accounts WHERE erased_at < ?", [.integer(now - SQLiteStore.erasedRetentionMillis)])
            _ = try c.run("INSERT OR REPLACE INTO erased_accounts (user_id, erased_at) VALUES (?, ?)", [.text(userID), .integer(now)])
            return true
        }
    }

    public func accountsErased(since: Int64) throws -> [String] {
        try read { c in
            try c.query("SELECT user_id FROM erased_accounts WHERE erased_at >= ?", [.integer(since)]).compactMap { $0[0].text }
        }
    }
}
