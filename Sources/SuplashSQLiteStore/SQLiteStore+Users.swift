import SuplashDomain
import SuplashSQL
import SuplashStorage
import SuplashStoreCore
import SuplashStoreRows

extension SQLiteStore: UserRepository {
    public func createUser(_ profile: UserProfile, passwordHash: String, session: NewSession) throws -> UserProfile {
        try write { ctx in
            let c = ctx.connection
            let existing = try c.query("SELECT 1 FROM users WHERE email = ?", [.text(profile.email)])
            if !existing.isEmpty { throw RepositoryError.emailTaken }
            let position = try self.takeChangePosition(ctx, userID: profile.id)
            let p = profile
            _ = try c.run(
                """
                INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
                    timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version,
                    id, password_hash, created_at, change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')
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
            try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE id = ?", [.text(id)]).first.map(StoreRows.user)
        }
    }

    public func user(email: String) throws -> StoredUser? {
        try read { c in
            try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = ?", [.text(email)])
                .first.map(StoreRows.user)
        }
    }

    public func updateProfile(
        userID: String, now: Int64,
        _ transform: @escaping @Sendable (UserProfile) throws -> UserProfile
    ) throws -> UserProfile {
        try write { ctx in
            let c = ctx.connection
            guard
                let row = try c.query(
                    "SELECT \(StoreRows.userColumns), lww_at FROM users WHERE id = ?",
                    [.text(userID)]
                ).first
            else {
                throw RepositoryError.notFound
            }
            let current = StoreRows.user(row).profile
            let next = DocumentWrites.revised(current, patched: try transform(current), now: now)
            let lwwAt = LastWriteWins.restStampAt(now: now, storedAt: row["lww_at"].int64 ?? 0)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run(
                """
                UPDATE users SET email = ?, email_verified = ?, display_name = ?, weight_kg = ?, activity_level = ?,
                    wake_time = ?, sleep_time = ?, timezone = ?, locale = ?, daily_goal_ml = ?, cup_sizes_ml = ?,
                    updated_at = ?, version = ?, change_position = ?, lww_at = ?, lww_device = ''
                WHERE id = ?
                """, StoreRows.profileValues(next) + [.integer(position), .integer(lwwAt), .text(userID)])
            try SQLiteStore.profileChanged(c, previous: current, current: next, now: now)
            return next
        }
    }

    public func listUsers(email: String?, afterID: String?, limit: Int) throws -> [UserProfile] {
        try read { c in
            var sql = "SELECT \(StoreRows.userColumns) FROM users WHERE id > ?"
            var args: [SQLValue] = [.text(afterID ?? "")]
            if let email {
                sql += " AND email = ?"
                args.append(.text(email))
            }
            sql += " ORDER BY id LIMIT ?"
            args.append(.integer(Int64(limit)))
            return try c.query(sql, args).map { StoreRows.user($0).profile }
        }
    }
}
