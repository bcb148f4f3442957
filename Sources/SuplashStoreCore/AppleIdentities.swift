import SuplashDomain
import SuplashSQL
import SuplashStoreRows

/// Sign in with Apple (spec: auth, "Sign in with Apple"): a known `sub` signs in to its user; an
/// unknown `sub` whose email an account holds links to it (taking it over, and revoking every
/// session, when Apple verified the email and the account's was not verified); otherwise a new
/// user without a password. The account found by email is read `FOR UPDATE` on PostgreSQL.
/// Two first sign-ins of one `sub` (or one email) on two PostgreSQL instances at once: the
/// second insert hits a unique index, the transaction is re-run and finds the first one's
/// identity.
extension AppleIdentityRepository where Self: SQLStore {
    public func signInWithApple(
        sub: String, email: String, emailVerified: Bool, newProfile: UserProfile,
        session: NewSession, appleToken: AppleRefreshToken?, now: Int64
    ) throws -> AppleSignInResult {
        try transaction { tx in
            var session = session
            // 1. A known Apple identity.
            if let row = try tx.queryOne(AppleSQL.userOfIdentity, [.text(sub)]) {
                if let appleToken { try AppleSQL.keep(tx, sub: sub, appleToken) }
                let user = StoreRows.user(row).profile
                session.userID = user.id
                try SessionStatements.insert(tx.connection, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: [])
            }
            // 2. An existing account with the same email: linked only when Apple verified it.
            if let row = try tx.queryOne(AppleSQL.lockUserByEmail, [.text(email)]) {
                let (user, takeover) = try AppleSignInRules.link(
                    StoreRows.user(row).profile, appleVerifiedEmail: emailVerified, now: now)
                var revoked: [String] = []
                if takeover {
                    // Account pre-hijacking: the verified owner takes it over without that password.
                    revoked = try tx.query(AppleSQL.revokeSessions, [.integer(now), .text(user.id)]).compactMap { $0["id"].text }
                    for id in revoked { tx.announce(.session(id: id)) }
                    try DeviceStatements.removeTokensOfRevokedSessions(tx, userID: user.id)
                    if !revoked.isEmpty { tx.announce(.userCutoff(userID: user.id, issuedBeforeSeconds: now / 1000)) }
                    // Stamped past the stored stamp, as a REST write (`LastWriteWins.restStampAt`).
                    let lwwAt = LastWriteWins.restStampAt(now: now, storedAt: row["lww_at"].int64 ?? 0)
                    let position = try tx.changePosition(of: .user(user.id), userID: user.id)
                    try tx.execute(AppleSQL.takeOver, [.integer(now), .integer(position), .integer(lwwAt), .text(user.id)])
                }
                try tx.execute(AppleSQL.insertIdentity, [.text(sub), .text(user.id), .integer(now)])
                if let appleToken { try AppleSQL.keep(tx, sub: sub, appleToken) }
                session.userID = user.id
                try SessionStatements.insert(tx.connection, session)
                return AppleSignInResult(user: user, created: false, revokedSessionIDs: revoked)
            }
            // 3. A new user without a password.
            let p = AppleSignInRules.newUser(newProfile, email: email, emailVerified: emailVerified)
            let position = try tx.changePosition(of: .user(p.id), userID: p.id)
            try tx.execute(
                AppleSQL.insertUser,
                StoreRows.profileValues(p) + [.text(p.id), .integer(p.createdAt), .integer(position), .integer(p.updatedAt)])
            try tx.execute(AppleSQL.insertIdentity, [.text(sub), .text(p.id), .integer(now)])
            if let appleToken { try AppleSQL.keep(tx, sub: sub, appleToken) }
            session.userID = p.id
            try SessionStatements.insert(tx.connection, session)
            return AppleSignInResult(user: p, created: true, revokedSessionIDs: [])
        }
    }
}

enum AppleSQL {
    static let userOfIdentity = SQLText(
        "SELECT \(StoreRows.userColumns) FROM users WHERE id = (SELECT user_id FROM apple_identities WHERE sub = ?1)")
    static let lockUserByEmail = SQLText { d in
        "SELECT \(StoreRows.userColumns), lww_at FROM users WHERE email = ?1 \(d.forUpdate())"
    }
    static let revokeSessions = SQLText(
        """
        UPDATE sessions SET revoked_at = ?1, revoked_reason = 'apple_takeover'
        WHERE user_id = ?2 AND revoked_at IS NULL RETURNING id
        """)
    static let takeOver = SQLText(
        """
        UPDATE users SET email_verified = 1, password_hash = NULL, version = version + 1, updated_at = ?1,
            change_position = ?2, lww_at = ?3, lww_device = ''
        WHERE id = ?4
        """)
    static let insertIdentity = SQLText("INSERT INTO apple_identities (sub, user_id, created_at) VALUES (?1, ?2, ?3)")
    static let keepToken = SQLText("UPDATE apple_identities SET client_id = ?1, refresh_token = ?2 WHERE sub = ?3")

    /// Keeps the identity's sealed refresh token (replacing an older one).
    static func keep(_ tx: some StoreTransaction, sub: String, _ token: AppleRefreshToken) throws {
        try tx.execute(keepToken, [.text(token.clientID), .text(token.sealed), .text(sub)])
    }
    static let insertUser = SQLText(
        """
        INSERT INTO users (email, email_verified, display_name, weight_kg, activity_level, wake_time, sleep_time,
            timezone, locale, daily_goal_ml, cup_sizes_ml, updated_at, version, reminders,
            id, password_hash, created_at, change_position, lww_at, lww_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, NULL, ?16, ?17, ?18, '')
        """)
}
