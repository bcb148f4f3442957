import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Users and their profile (spec §4, "Profile"): sign-up with its first session (and first
/// hydration reminder), reads by id and email, the profile patch with its change position, and the admin listing. A profile
/// write reads the user's row `FOR UPDATE` on PostgreSQL, so concurrent patches of one user
/// run one after the other.
extension UserRepository where Self: SQLStore {
    public func createUser(_ profile: UserProfile, passwordHash: String, session: NewSession) throws -> UserProfile {
        try transaction { tx in
            if try tx.queryOne(UserSQL.emailTaken, [.text(profile.email)]) != nil { throw RepositoryError.emailTaken }
            let p = profile
            let position = try tx.changePosition(of: .user(p.id), userID: p.id)
            try tx.execute(
                UserSQL.insert,
                StoreRows.profileValues(p) + [
                    .text(p.id), .text(passwordHash), .integer(p.createdAt), .integer(position), .integer(p.updatedAt),
                ])
            try SessionStatements.insert(tx.connection, session)
            // The first hydration reminder (no history: the plan of a day with nothing logged).
            try ReminderPlanner.dayChanged(tx, userID: p.id, profile: p, intakeWritten: false, now: p.createdAt)
            return p
        }
    }

    public func user(id: String) throws -> StoredUser? {
        try reading { c in try c.queryOne(UserSQL.byID, [.text(id)]).map(StoreRows.user) }
    }

    public func user(email: String) throws -> StoredUser? {
        try reading { c in try c.queryOne(UserSQL.byEmail, [.text(email)]).map(StoreRows.user) }
    }

    @discardableResult
    public func replacePasswordHash(userID: String, currentHash: String, newHash: String) throws -> Bool {
        try transaction { tx in
            try tx.execute(UserSQL.replacePasswordHash, [.text(newHash), .text(userID), .text(currentHash)]) > 0
        }
    }

    public func updateProfile(
        userID: String, now: Int64,
        _ transform: @escaping @Sendable (UserProfile) throws -> UserProfile
    ) throws -> UserProfile {
        try transaction { tx in
            guard let row = try tx.queryOne(UserSQL.lockForPatch, [.text(userID)]) else { throw RepositoryError.notFound }
            let current = StoreRows.user(row).profile
            let next = DocumentWrites.revised(current, patched: try transform(current), now: now)
            let lwwAt = LastWriteWins.restStampAt(now: now, storedAt: row["lww_at"].int64 ?? 0)
            let position = try tx.changePosition(of: .user(userID), userID: userID)
            try tx.execute(
                UserSQL.update, StoreRows.profileValues(next) + [.integer(position), .integer(lwwAt), .text(userID)])
            try EntryBookkeeping.profileChanged(tx, previous: current, current: next, now: now)
            return next
        }
    }

    public func listUsers(email: String?, afterID: String?, limit: Int) throws -> [UserProfile] {
        try reading { c in
            let rows =
                if let email {
                    try c.query(UserSQL.pageWithEmail, [.text(afterID ?? ""), .text(email), .integer(Int64(limit))])
                } else {
                    try c.query(UserSQL.page, [.text(afterID ?? ""), .integer(Int64(limit))])
                }
            return rows.map { StoreRows.user($0).profile }
        }
    }
}

enum UserSQL {
    static let emailTaken = SQLText("SELECT 1 FROM users WHERE email = ?1")
    static let insert = SQLText(
        """
        INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
            timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version, reminders,
            id, password_hash, created_at, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, '')
        """)
    static let byID = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE id = ?1")
    static let byEmail = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE email = ?1")
    static let lockForPatch = SQLText { d in
        "SELECT \(StoreRows.userColumns), lww_at FROM users WHERE id = ?1 \(d.forUpdate())"
    }
    static let update = SQLText(
        """
        UPDATE users SET email = ?1, email_verified = ?2, display_name = ?3, weight_kg = ?4, activity_level = ?5,
            wake_time = ?6, sleep_time = ?7, timezone = ?8, locale = ?9, daily_goal_ml = ?10, cup_sizes_ml = ?11,
            updated_at = ?12, version = ?13, reminders = ?14, change_position = ?15, lww_at = ?16, lww_device = ''
        WHERE id = ?17
        """)
    static let replacePasswordHash = SQLText(
        "UPDATE users SET password_hash = ?1 WHERE id = ?2 AND password_hash = ?3")
    static let page = SQLText("SELECT \(StoreRows.userColumns) FROM users WHERE id > ?1 ORDER BY id LIMIT ?2")
    static let pageWithEmail = SQLText(
        "SELECT \(StoreRows.userColumns) FROM users WHERE id > ?1 AND email = ?2 ORDER BY id LIMIT ?3")
}
