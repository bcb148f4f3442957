import SuplashDomain
import SuplashPostgres
import SuplashStoreCore
import SuplashStoreRows

/// Sign in with Apple. Two first sign-ins of one `sub` (or one email) on two instances at
/// once: the second insert hits a unique index and the transaction is re-run, then finds
/// the identity the first one committed.
extension PostgresStore: AppleIdentityRepository {
    public func signInWithApple(
        sub: String, email: String, emailVerified: Bool, newProfile: UserProfile,
        session: NewSession, now: Int64
    ) throws -> AppleSignInResult {
        try write { tx in
            let c = tx.connection
            var session = session
            // 1. A known Apple identity.
            if let row = try c.query(
                """
                SELECT \(StoreRows.userColumns) FROM users WHERE id = (SELECT user_id FROM apple_identities WHERE sub = $1)
                """, [.text(sub)]
            ).first {
                let user = StoreRows.user(row).profile
                session.userID = user.id
                try SessionStatements.insert(c, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: [])
            }
            // 2. An existing account with the same email: linked only when Apple verified it.
            if let row = try c.query("SELECT \(StoreRows.userColumns) FROM users WHERE email = $1 FOR UPDATE", [.text(email)]).first {
                let (user, takeover) = try AppleSignInRules.link(
                    StoreRows.user(row).profile, appleVerifiedEmail: emailVerified,
                    now: now)
                var revoked: [String] = []
                if takeover {
                    // Account pre-hijacking: the verified owner takes it over without that password.
                    revoked = try c.query(
                        """
                        UPDATE sessions SET revoked_at = $1, revoked_reason = 'apple_takeover'
                        WHERE user_id = $2 AND revoked_at IS NULL RETURNING id
                        """, [.integer(now), .text(user.id)]
                    ).compactMap { $0["id"].text }
                    for id in revoked { try self.publish(tx, .session(id: id)) }
                    if !revoked.isEmpty {
                        try self.publish(tx, .userCutoff(userID: user.id, issuedBeforeSeconds: now / 1000))
                    }
                    let position = try self.changePosition(tx, userID: user.id, row: ChangeRows.user(user.id))
                    try c.update(
                        """
                        UPDATE users SET email_verified = 1, password_hash = NULL, version = version + 1, updated_at = $1,
                            change_position = $2, lww_at = GREATEST($3, lww_at + 1), lww_device = ''
                        WHERE id = $4
                        """, [.integer(now), .integer(position), .integer(now), .text(user.id)])
                }
                try c.update(
                    "INSERT INTO apple_identities (sub, user_id, created_at) VALUES ($1, $2, $3)",
                    [.text(sub), .text(user.id), .integer(now)])
                session.userID = user.id
                try SessionStatements.insert(c, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: revoked)
            }
            // 3. A new user without a password.
            let p = AppleSignInRules.newUser(newProfile, email: email, emailVerified: emailVerified)
            let position = try PostgresChangeSequence.of(tx).changePosition(for: ChangeRows.user(p.id))
            try c.update(
                """
                INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
                    timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version,
                    id, password_hash, created_at, change_position, lww_at, lww_device)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL, $15, $16, $17, '')
                """,
                StoreRows.profileValues(p) + [
                    .text(p.id), .integer(p.createdAt), .integer(position), .integer(p.updatedAt),
                ])
            try c.update(
                "INSERT INTO apple_identities (sub, user_id, created_at) VALUES ($1, $2, $3)",
                [.text(sub), .text(p.id), .integer(now)])
            session.userID = p.id
            try SessionStatements.insert(c, session)
            return AppleSignInResult(user: p, created: true, revokedSessionIDs: [])
        }
    }
}
