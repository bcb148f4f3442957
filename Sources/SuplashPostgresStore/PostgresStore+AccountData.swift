import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashStoreRows

extension PostgresStore: AccountDataRepository {
    /// Read in one snapshot, so the parts agree.
    public func exportAccount(userID: String) throws -> AccountExport? {
        try snapshotRead { c in
            guard let profile = try PostgresStore.loadProfile(c, userID: userID) else { return nil }
            let entries = try c.query(
                """
                SELECT \(StoreRows.entryColumns) FROM water_entries WHERE user_id = $1 AND deleted = 0 ORDER BY logged_at, id
                """, [.text(userID)]
            ).map(StoreRows.entry)
            let bills = try c.query(
                """
                SELECT \(StoreRows.billColumns) FROM bills WHERE user_id = $1 AND deleted = 0 ORDER BY period DESC, id DESC
                """, [.text(userID)]
            ).map(StoreRows.bill)
            return AccountExport(
                profile: profile, entries: entries, days: try PostgresStore.loadDays(c, userID: userID),
                bills: bills, achievements: try PostgresStore.loadAchievements(c, userID: userID))
        }
    }

    /// How long an erased id is kept for the revocation view (1 day, ms; access tokens live ≤ 1 h by default).
    static let erasedRetentionMillis: Int64 = 86_400_000

    public func eraseAccount(userID: String, now: Int64) throws -> Bool {
        try write { tx in
            let c = tx.connection
            guard !(try c.query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [.text(userID)])).isEmpty else { return false }
            let u: [SQLValue] = [.text(userID)]
            try c.update("DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = $1)", u)
            for table in ["sessions", "water_entries", "days", "daily_totals", "bills", "achievements"] {
                try c.update("DELETE FROM \(table) WHERE user_id = $1", u)
            }
            try c.update("DELETE FROM users WHERE id = $1", u)
            try c.update("DELETE FROM erased_accounts WHERE erased_at < $1", [.integer(now - PostgresStore.erasedRetentionMillis)])
            try c.update(
                """
                INSERT INTO erased_accounts (user_id, erased_at) VALUES ($1, $2)
                ON CONFLICT (user_id) DO UPDATE SET erased_at = EXCLUDED.erased_at
                """, [.text(userID), .integer(now)])
            try self.publish(tx, .account(userID: userID))
            return true
        }
    }

    public func accountsErased(since: Int64) throws -> [String] {
        try read { c in
            try c.query("SELECT user_id FROM erased_accounts WHERE erased_at >= $1", [.integer(since)]).compactMap { $0[0].text }
        }
    }
}
