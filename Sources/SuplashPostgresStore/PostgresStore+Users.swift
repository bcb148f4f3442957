import SuplashDomain
import SuplashPostgres
import SuplashStoreCore
import SuplashStoreRows

extension PostgresStore: UserRepository {
    public func createUser(_ profile: UserProfile, passwordHash: String, session: NewSession) throws -> UserProfile {
        try write { tx in
            let c = tx.connection
            if !(try c.query("SELECT 1 FROM users WHERE email = $1", [.text(profile.email)])).isEmpty {
                throw RepositoryError.emailTaken
            }
            let p = profile
            let position = try self.changePosition(tx, userID: p.id, row: ChangeRows.user(p.id))
            try c.update(
                """
                INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
                    timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version,
                    id, password_hash, created_at, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, '')
                """,
                StoreRows.profileValues(p) + [
                    .text(p.id), .text(passwordHash), .integer(p.createdAt), .integer(position), .integer(p.updatedAt),
                ])
            try SessionStatements.insert(c, session)
            return p
        }
    }

    public func user(id: String) throws -> StoredUser? {
        try read { c in
            try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE id = $1", [.text(id)])
                .first.map(StoreRows.user)
        }
    }

    public func user(email: String) throws -> StoredUser? {
        try read { c in
            try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = $1", [.text(email)])
                .first.map(StoreRows.user)
        }
    }

    /// A time-zone or base-goal change re-buckets the daily totals and re-evaluates goals in
    /// the same transaction (`profileChanged`), as on SQLite.
    public func updateProfile(
        userID: String, now: Int64,
        _ transform: @escaping @Sendable (UserProfile) throws -> UserProfile
    ) throws -> UserProfile {
        try write { tx in
            let c = tx.connection
            guard
                let row = try c.query(
                    "SELECT \(StoreRows.userColumns), lww_at FROM users WHERE id = $1 FOR UPDATE",
                    [.text(userID)]
                ).first
            else {
                throw RepositoryError.notFound
            }
            let current = StoreRows.user(row).profile
            let next = DocumentWrites.revised(current, patched: try transform(current), now: now)
            let lwwAt = LastWriteWins.restStampAt(now: now, storedAt: row["lww_at"].int64 ?? 0)
            let position = try self.changePosition(tx, userID: userID, row: ChangeRows.user(userID))
            try c.update(
                """
                UPDATE users SET email = $1, email_verified = $2, display_name = $3, weight_kg = $4, activity_level = $5,
                    wake_time = $6, sleep_time = $7, timezone = $8, locale = $9, daily_goal_ml = $10, cup_sizes_ml = $11,
                    updated_at = $12, version = $13, change_position = $14, lww_at = $15, lww_device = ''
                WHERE id = $16
                """, StoreRows.profileValues(next) + [.integer(position), .integer(lwwAt), .text(userID)])
            try PostgresStore.profileChanged(tx, previous: current, current: next, now: now)
            return next
        }
    }

    public func listUsers(email: String?, afterID: String?, limit: Int) throws -> [UserProfile] {
        try read { c in
            try c.query(
                """
                SELECT \(StoreRows.userColumns) FROM users
                WHERE id > $1 AND ($2::text IS NULL OR email = $2::text)
                ORDER BY id LIMIT $3
                """, [.text(afterID ?? ""), .optionalText(email), .integer(Int64(limit))]
            )
            .map { StoreRows.user($0).profile }
        }
    }
}
