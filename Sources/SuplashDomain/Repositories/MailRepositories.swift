/// What an emailed code proves (spec §3 email verification and password reset).
public enum EmailCodePurpose: String, Sendable, CaseIterable {
    /// Proves the profile email (`POST /v1/auth/email/verify`).
    case verifyEmail = "verify_email"
    /// Allows `POST /v1/auth/password/reset`.
    case resetPassword = "reset_password"
}

/// A message waiting in the transactional outbox (or handed to a transport).
public struct OutboxMessage: Sendable, Equatable {
    /// Random id; the `Idempotency-Key` sent to the mail provider and the `.eml` file name.
    public var id: String
    /// The recipient address (normalised email).
    public var recipient: String
    /// Plain-text subject (UTF-8).
    public var subject: String
    /// Plain-text body (UTF-8, LF line ends).
    public var text: String
    /// ms since the epoch.
    public var createdAt: Int64
    /// Delivery attempts made so far.
    public var attempts: Int

    /// A message; `createdAt` in ms since the epoch.
    public init(id: String, recipient: String, subject: String, text: String, createdAt: Int64, attempts: Int = 0) {
        self.id = id
        self.recipient = recipient
        self.subject = subject
        self.text = text
        self.createdAt = createdAt
        self.attempts = attempts
    }
}

/// A new code to store: only its MAC, never the digits.
public struct NewEmailCode: Sendable {
    public var userID: String
    public var purpose: EmailCodePurpose
    /// MAC of the code (32 bytes).
    public var codeHash: [UInt8]
    /// ms since the epoch.
    public var createdAt: Int64
    /// ms since the epoch.
    public var expiresAt: Int64

    /// A code row; times in ms since the epoch.
    public init(userID: String, purpose: EmailCodePurpose, codeHash: [UInt8], createdAt: Int64, expiresAt: Int64) {
        self.userID = userID
        self.purpose = purpose
        self.codeHash = codeHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The result of asking for a new code.
public enum CodeIssueOutcome: Sendable, Equatable {
    /// The code and its message were committed together.
    case issued
    /// The previous code of this purpose is younger than the minimum interval; nothing was
    /// written. `retryAfterMs` is the time until a new one may be issued.
    case tooSoon(retryAfterMs: Int64)
    /// No such user (only from `issueCode(email:…)`); nothing was written.
    case noSuchUser
}

/// What presenting a code does once it matches.
public enum CodeRedemption: Sendable, Equatable {
    /// Sets `emailVerified` (a profile write: version + 1).
    case verifyEmail
    /// Replaces the password hash and revokes every session of the user.
    case resetPassword(newPasswordHash: String)
}

/// The result of presenting a code.
public enum CodeCheckOutcome: Sendable, Equatable {
    /// The code matched and was consumed; the redemption was applied in the same
    /// transaction. `revokedSessionIDs` lists sessions a password reset revoked.
    case redeemed(revokedSessionIDs: [String])
    /// The code did not match; one attempt was counted (`attemptsLeft` remain).
    case wrong(attemptsLeft: Int)
    /// The code is past its expiry (it was deleted).
    case expired
    /// Every attempt is used up (the code was deleted).
    case attemptsExhausted
    /// No live code of this purpose (or no such user).
    case noCode
}

/// Emailed codes and the transactional outbox they are sent through (spec §3). Every method that writes does so in one durable transaction.
public protocol EmailCodeRepository: Sendable {
    /// Stores `code` (replacing the user's earlier code of that purpose) and enqueues
    /// `message` in the same transaction — unless the earlier code was created less than
    /// `minIntervalMs` before `code.createdAt`, in which case nothing is written.
    func issueCode(_ code: NewEmailCode, message: OutboxMessage, minIntervalMs: Int64) throws -> CodeIssueOutcome

    /// Like `issueCode`, but finds the user by (normalised) `email` inside the transaction and
    /// builds code and message with `make(user)`; `.noSuchUser` when there is none.
    func issueCode(
        email: String, purpose: EmailCodePurpose, now: Int64, minIntervalMs: Int64,
        make: @escaping @Sendable (StoredUser) -> (NewEmailCode, OutboxMessage)
    ) throws -> CodeIssueOutcome

    /// Presents a code for `userID`: `matches(storedHash)` decides (compare in constant
    /// time). A match deletes the code and applies `redemption`; a miss counts an attempt
    /// and deletes the code when `maxAttempts` are used; an expired code is deleted.
    func redeemCode(
        userID: String, purpose: EmailCodePurpose, now: Int64, maxAttempts: Int,
        matches: @escaping @Sendable ([UInt8]) -> Bool, redemption: CodeRedemption
    ) throws -> CodeCheckOutcome
}

/// The delivery side of the outbox, used by the single delivery worker.
public protocol OutboxRepository: Sendable {
    /// Undelivered, not abandoned messages with `next_attempt_at ≤ now`, oldest first; at most `limit`.
    func dueMessages(now: Int64, limit: Int) throws -> [OutboxMessage]
    /// The earliest `next_attempt_at` of a pending message, or nil when none is pending.
    func nextAttemptTime() throws -> Int64?
    /// Marks `id` delivered at `now` and clears its body.
    func markDelivered(id: String, now: Int64) throws
    /// Records a failed attempt: `attempts` so far, next try at `nextAttemptAt`; with
    /// `abandon`, the message is given up (`failed_at = now`, body cleared).
    /// `errorKind` is a fixed word (`timeout`, `http_503`, …), never provider text.
    func markAttemptFailed(id: String, attempts: Int, nextAttemptAt: Int64, abandon: Bool, errorKind: String, now: Int64) throws
    /// Messages neither delivered nor abandoned (the metrics backlog).
    func pendingCount() throws -> Int
    /// Deletes pending messages whose code expired at `now` (ms since the epoch) — also those
    /// held for a relay address (Apple's `email-disabled`): a held code mail never outlives its
    /// code. Returns how many.
    func dropExpiredMessages(now: Int64) throws -> Int
    /// The due messages this delivery worker should attempt now (at most `limit`, oldest
    /// first). With several server instances on one database (PostgreSQL) each message is
    /// handed to one worker only: the claim pushes its `next_attempt_at` to `now + leaseMs`,
    /// so if that worker dies before recording the attempt, another retries it (same message
    /// id) after the lease. The default, for a single instance, is `dueMessages`.
    func claimDueMessages(now: Int64, limit: Int, leaseMs: Int64) throws -> [OutboxMessage]
}

extension OutboxRepository {
    /// One instance, one worker thread: nothing to claim against.
    public func claimDueMessages(now: Int64, limit: Int, leaseMs: Int64) throws -> [OutboxMessage] {
        try dueMessages(now: now, limit: limit)
    }
}

/// The outcome of Sign in with Apple.
public struct AppleSignInResult: Sendable {
    /// The signed-in user.
    public var user: UserProfile
    /// True when the user was created by this call (201), false for an existing or linked one (200).
    public var created: Bool
    /// Sessions revoked because an unverified password account was taken over by its
    /// verified owner (see docs/decisions.md).
    public var revokedSessionIDs: [String]

    /// The outcome of one sign-in.
    public init(user: UserProfile, created: Bool, revokedSessionIDs: [String]) {
        self.user = user
        self.created = created
        self.revokedSessionIDs = revokedSessionIDs
    }
}

/// Apple identities (`sub` → user) for `POST /v1/auth/apple`.
public protocol AppleIdentityRepository: Sendable {
    /// In one transaction: the user linked to `sub`; else, when `emailVerified` and a user
    /// with `email` exists, links `sub` to that user (marking its email verified; if it was
    /// not verified before, its password is removed and its sessions revoked); else creates
    /// `newProfile` without a password and links `sub`. Then stores `session` for the user
    /// (its `userID` is replaced by the found user's id).
    /// With `appleToken` (from an authorization-code exchange) the identity keeps that sealed
    /// refresh token and its client id, replacing an older one.
    /// - Throws: `RepositoryError.emailTaken` when `email` belongs to another account and is
    ///   not verified by Apple.
    func signInWithApple(
        sub: String, email: String, emailVerified: Bool, newProfile: UserProfile,
        session: NewSession, appleToken: AppleRefreshToken?, now: Int64
    ) throws -> AppleSignInResult
}

extension AppleIdentityRepository {
    /// A sign-in without an authorization code (no refresh token kept).
    public func signInWithApple(
        sub: String, email: String, emailVerified: Bool, newProfile: UserProfile,
        session: NewSession, now: Int64
    ) throws -> AppleSignInResult {
        try signInWithApple(
            sub: sub, email: email, emailVerified: emailVerified, newProfile: newProfile, session: session,
            appleToken: nil, now: now)
    }
}
