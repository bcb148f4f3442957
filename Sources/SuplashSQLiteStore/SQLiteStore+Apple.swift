import SuplashDomain
import SuplashStorage
import SuplashStoreCore
import SuplashStoreRows

extension SQLiteStore: AppleIdentityRepository {
    public func signInWithApple(
        sub: String, email: String, emailVerified: Bool, newProfile: UserProfile,
        session: NewSession, now: Int64
    ) throws -> AppleSignInResult {
        try write { ctx in
            let c = ctx.connection
            var session = session
            // 1. A known Apple identity.
            if let row = try c.query(
                """
                SELECT \(StoreRows.userColumns) FROM users WHERE id = (SELECT user_id FROM apple_identities WHERE sub = ?)
                """, [.text(sub)]
            ).first {
                let user = StoreRows.user(row).profile
                session.userID = user.id
                try SessionStatements.insert(c, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: [])
            }
            // 2. An existing account with the same email: linked only when Apple verified it.
            if let row = try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = ?", [.text(email)]).first {
                let (user, takeover) = try AppleSignInRules.link(
                    StoreRows.user(row).profile, appleVerifiedEmail: emailVerified,
                    now: now)
                var revoked: [String] = []
                if takeover {
                    // Account pre-hijacking: the verified owner takes it over without that password.
                    revoked = try c.query(
                        """
                        UPDATE sessions SET revoked_at = ?, revoked_reason = 'apple_takeover'
                        WHERE user_id = ? AND revoked_at IS NULL RETURNING id
                        """, [.integer(now), .text(user.id)]
                    ).compactMap { $0["id"].text }
                    let position = try SQLiteStore.nextChangePosition(c)
                    _ = try c.run(
                        """
                        UPDATE users SET email_verified = 1, password_hash = NULL, version = version + 1, updated_at = ?,
                            change_position = ?, lww_at = max(?, lww_at + 1), lww_device = ''
                        WHERE id = ?
                        """, [.integer(now), .integer(position), .integer(now), .text(user.id)])
                }
                _ = try c.run(
                    "INSERT INTO apple_identities (sub, user_id, created_at) VALUES (?, ?, ?)",
                    [.text(sub), .text(user.id), .integer(now)])
                session.userID = user.id
                try SessionStatements.insert(c, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: revoked)
            }
            // 3. A new user without a password.
            let p = AppleSignInRules.newUser(newProfile, email: email, emailVerified: emailVerified)
            let position = try SQLiteStore.nextChangePosition(c)
            _ = try c.run(
                """
                INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
                    timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version,
                    id, password_hash, created_at, change_position, lww_at, lww_device)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, '')
                """,
                StoreRows.profileValues(p) + [
                    .text(p.id), .integer(p.createdAt), .integer(position), .integer(p.updatedAt),
                ])
            _ = try c.run(
                "INSERT INTO apple_identities (sub, user_id, created_at) VALUES (?, ?, ?)",
                [.text(sub), .text(p.id), .integer(now)])
            session.userID = p.id
            try SessionStatements.insert(c, session)
            return AppleSignInResult(user: p, created: true, revokedSessionIDs: [])
        }
    }
}
