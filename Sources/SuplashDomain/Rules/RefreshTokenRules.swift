/// Refresh-token rotation with reuse detection (spec §3), shared by every store adapter:
/// the adapter reads the presented token's row and its session, asks `verdict`, and writes
/// what it says.
public enum RefreshTokenRules {
    /// What presenting a known refresh token does.
    public enum Verdict: Sendable, Equatable {
        /// The session was revoked earlier → `RefreshOutcome.revoked`; nothing is written.
        case revoked
        /// The token was already rotated: revoke the whole session (reason
        /// `refresh_token_reused`) → `RefreshOutcome.reused`.
        case reused
        /// Past its expiry → `RefreshOutcome.expired`; nothing is written.
        case expired
        /// Current: mark it used and store the new token → `RefreshOutcome.rotated`.
        case rotate
    }

    /// The verdict on a token of a session that is `sessionRevoked`, already `tokenUsed`,
    /// expiring at `expiresAt` (ms), presented at `now` (ms). Revocation is checked first,
    /// then reuse (a reused token revokes even when it has expired), then expiry.
    public static func verdict(sessionRevoked: Bool, tokenUsed: Bool, expiresAt: Int64, now: Int64) -> Verdict {
        if sessionRevoked { return .revoked }
        if tokenUsed { return .reused }
        if expiresAt <= now { return .expired }
        return .rotate
    }
}
