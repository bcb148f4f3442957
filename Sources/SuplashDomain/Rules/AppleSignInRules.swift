/// Sign in with Apple account rules (spec §3, docs/decisions.md "Apple linking and pre-hijacking"),
/// shared by every store adapter.
public enum AppleSignInRules {
    /// Linking an Apple identity to `existing`, the account that already holds the email
    /// Apple sent. Linked only when Apple vouches for the email (`appleVerifiedEmail`). When
    /// the account's own email was never verified, whoever set its password never proved the
    /// mailbox (account pre-hijacking): the link is a `takeover` — the adapter removes the
    /// password and revokes every session (reason `apple_takeover`) — and the account becomes
    /// verified (a profile write: version + 1, `updatedAt` = now, ms).
    /// - Returns: the linked user as it is after the link, and whether it is a takeover.
    /// - Throws: `RepositoryError.emailTaken` when Apple does not vouch for the email.
    public static func link(_ existing: UserProfile, appleVerifiedEmail: Bool, now: Int64) throws
        -> (user: UserProfile, takeover: Bool)
    {
        guard appleVerifiedEmail else { throw RepositoryError.emailTaken }
        guard !existing.emailVerified else { return (existing, false) }
        var user = existing
        user.emailVerified = true
        user.version += 1
        user.updatedAt = now
        return (user, true)
    }

    /// The profile of a new account created by Sign in with Apple (no password): `profile`
    /// with Apple's `email` (or the placeholder) and whether Apple verified it.
    public static func newUser(_ profile: UserProfile, email: String, emailVerified: Bool) -> UserProfile {
        var p = profile
        p.email = email
        p.emailVerified = emailVerified
        return p
    }
}
