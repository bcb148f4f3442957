/// The rules of emailed codes (spec §3, docs/decisions.md "Email codes"), shared by every store
/// adapter: when a new code may be issued and what presenting one does. Pure: the adapter
/// reads the stored code row, asks these, and writes what they say.
public enum EmailCodeRules {
    /// The wait (ms) before a new code of the same purpose may be issued at `now` (ms), when
    /// the previous one was issued at `previousCreatedAt` (ms; nil: none) and codes must be
    /// `minIntervalMs` apart; nil when it may be issued now (→ `.tooSoon(retryAfterMs:)`).
    public static func resendWait(previousCreatedAt: Int64?, minIntervalMs: Int64, now: Int64) -> Int64? {
        guard let previousCreatedAt else { return nil }
        let wait = previousCreatedAt + minIntervalMs - now
        return wait > 0 ? wait : nil
    }

    /// What presenting a code does to the stored code row.
    public enum Verdict: Sendable, Equatable {
        /// Past its expiry: delete the code → `.expired`.
        case expired
        /// Every attempt used up: delete the code → `.attemptsExhausted`.
        case attemptsExhausted
        /// No match: count the attempt, or delete the code when `attemptsLeft` is 0 (or less) →
        /// `.wrong(attemptsLeft:)`.
        case wrong(attemptsLeft: Int)
        /// A match: delete the code and apply the redemption (→ `.redeemed`).
        case redeem
    }

    /// The verdict on a stored code that expires at `expiresAt` (ms) after `attempts`
    /// failed attempts, presented at `now` (ms) with at most `maxAttempts` allowed.
    /// `matches` (a constant-time hash compare) is asked only for a live code with
    /// attempts left.
    public static func verdict(
        expiresAt: Int64, attempts: Int, now: Int64, maxAttempts: Int,
        matches: () -> Bool
    ) -> Verdict {
        if expiresAt <= now { return .expired }
        if attempts >= maxAttempts { return .attemptsExhausted }
        guard matches() else { return .wrong(attemptsLeft: maxAttempts - attempts - 1) }
        return .redeem
    }
}
