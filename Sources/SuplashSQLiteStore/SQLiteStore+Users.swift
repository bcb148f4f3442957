import SuplashDomain
import SuplashStorage

extension SQLiteStore: UserRepository {
    static let userColumns = """
        id, email, email_verified, password_hash, display_name, weight_kg, activity_level, wake_time, sleep_time, \
        timezone, locale, daily_goal_ml, cup_sizes_ml, created_at, updated_at, version
        """

    static func decodeUser(_ row: SQLiteRow) -> StoredUser {
        var p = UserProfile(id: row["id"].text ?? "", email: row["email"].text ?? "",
                            displayName: row["display_name"].text, now: row["created_at"].int64 ?? 0)
        p.emailVerified = (row["email_verified"].int64 ?? 0) != 0
        p.weightKg = row["weight_kg"].double
        p.activityLevel = ActivityLevel(rawValue: row["activity_level"].text ?? "") ?? UserProfile.defaultActivityLevel
        p.wakeTime = row["wake_time"].text ?? UserProfile.defaultWakeTime
        p.sleepTime = row["sleep_time"].text ?? UserProfile.defaultSleepTime
        p.timezone = row["timezone"].text ?? UserProfile.defaultTimezone
        p.locale = row["locale"].text ?? UserProfile.defaultLocale
        p.dailyGoalMl = row["daily_goal_ml"].int64.map { Int($0) }
        p.cupSizesMl = (row["cup_sizes_ml"].text ?? "").utf8.split(separator: UInt8(ascii: ","))
            .compactMap { Int(Substring($0)) }
        p.updatedAt = row["updated_at"].int64 ?? p.createdAt
        p.version = row["version"].int64 ?? 1
        return StoredUser(profile: p, passwordHash: row["password_hash"].text)
    }

    static func profileValues(_ p: UserProfile) -> [SQLValue] {
        [
            .text(p.email), .integer(p.emailVerified ? 1 : 0), p.displayName.sqlValue,
            p.weightKg.map(SQLValue.real) ?? .null, .text(p.activityLevel.rawValue), .text(p.wakeTime),
            .text(p.sleepTime), .text(p.timezone), .text(p.locale), p.dailyGoalMl.map { SQLValue.integer(Int64($0)) } ?? .null,
            .text(p.cupSizesMl.map(String.init).joined(separator: ",")), .integer(p.updatedAt), .integer(p.version),
        ]
    }

    public func createUser(_ profile: UserProfile, passwordHash: String, session: NewSession) throws -> UserProfile {
        try write { ctx in
            let c = ctx.connection
            let existing = try c.query("SELECT 1 FROM users WHERE email = ?", [.text(profile.email)])
            if !existing.isEmpty { throw RepositoryError.emailTaken }
            let position = try self.takeChangePosition(ctx, userID: profile.id)
            let p = profile
            _ = try c.run("""
                INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
                    timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version,
                    id, password_hash, created_at, change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')
                """, SQLiteStore.profileValues(p) + [
                    .text(p.id), .text(passwordHash), .integer(p.createdAt), .integer(position), .integer(p.updatedAt),
                ])
            try SQLiteStore.insertSession(c, session)
            return p
        }
    }

    public func user(id: String) throws -> StoredUser? {
        try read { c in
            try c.query("SELECT \(SQLiteStore.userColumns) FROM users WHERE id = ?", [.text(id)]).first.map(SQLiteStore.decodeUser)
        }
    }

    public func user(email: String) throws -> StoredUser? {
        try read { c in
            try c.query("SELECT \(SQLiteStore.userColumns) FROM users WHERE email = ?", [.text(email)])
                .first.map(SQLiteStore.decodeUser)
        }
    }

    public func updateProfile(userID: String, now: Int64,
                              _ transform: @escaping @Sendable (UserProfile) throws -> UserProfile) throws -> UserProfile {
        try write { ctx in
            let c = ctx.connection
            guard let row = try c.query("SELECT \(SQLiteStore.userColumns), lww_at FROM users WHERE id = ?",
                                        [.text(userID)]).first else {
                throw RepositoryError.notFound
            }
            let current = SQLiteStore.decodeUser(row).profile
            var next = try transform(current)
            next.id = current.id
            next.email = current.email
            next.emailVerified = current.emailVerified
            next.createdAt = current.createdAt
            next.updatedAt = now
            next.version = current.version + 1
            let lwwAt = max(now, (row["lww_at"].int64 ?? 0) + 1)
            let position = try self.takeChangePosition(ctx, userID: userID)
            _ = try c.run("""
                UPDATE users SET email = ?, email_verified = ?, display_name = ?, weight_kg = ?, activity_level = ?,
                    wake_time = ?, sleep_time = ?, timezone = ?, locale = ?, daily_goal_ml = ?, cup_sizes_ml = ?,
                    updated_at = ?, version = ?, change_position = ?, lww_at = ?, lww_device = ''
                WHERE id = ?
                """, SQLiteStore.profileValues(next) + [.integer(position), .integer(lwwAt), .text(userID)])
            try SQLiteStore.profileChanged(c, previous: current, current: next, now: now)
            return next
        }
    }

    public func listUsers(email: String?, afterID: String?, limit: Int) throws -> [UserProfile] {
        try read { c in
            var sql = "SELECT \(SQLiteStore.userColumns) FROM users WHERE id > ?"
            var args: [SQLValue] = [.text(afterID ?? "")]
            if let email {
                sql += " AND email = ?"
                args.append(.text(email))
            }
            sql += " ORDER BY id LIMIT ?"
            args.append(.integer(Int64(limit)))
            return try c.query(sql, args).map { SQLiteStore.decodeUser($0).profile }
        }
    }
}
