/// Apple's refresh token from an authorization-code exchange (spec §3), sealed by the caller
/// for the identity row (`apple_identities`, `refresh_token`, row id = the Apple `sub`).
public struct AppleRefreshToken: Sendable, Equatable {
    /// The client id the code was issued to (the identity token's audience).
    public var clientID: String
    /// The sealed envelope (`s1.<keyId>.…`); never the plaintext.
    public var sealed: String

    /// A sealed token for `clientID`.
    public init(clientID: String, sealed: String) {
        self.clientID = clientID
        self.sealed = sealed
    }
}

/// One queued revocation of an Apple refresh token (docs/apple.md, "Revocation").
public struct AppleRevokeJob: Sendable, Equatable {
    /// The job id (`<erasure time ms>.<sub>`).
    public var id: String
    /// The Apple `sub` the token was sealed for (its sealing row id).
    public var sub: String
    /// The client id the token was issued to.
    public var clientID: String
    /// The sealed refresh token (bound to `apple_identities`, `refresh_token`, `sub`).
    public var sealedRefreshToken: String
    /// Attempts made before this one.
    public var attempts: Int

    /// A job as stored.
    public init(id: String, sub: String, clientID: String, sealedRefreshToken: String, attempts: Int) {
        self.id = id
        self.sub = sub
        self.clientID = clientID
        self.sealedRefreshToken = sealedRefreshToken
        self.attempts = attempts
    }
}

/// How one revoke attempt ended, as recorded.
public enum AppleRevokeOutcome: Sendable, Equatable {
    /// Revoked (200) or already revoked (`invalid_grant`): the job is done, its token blanked.
    case done
    /// Try again at `nextAttemptAt` (ms since the epoch); `errorCode` names why (Apple's code).
    case retry(nextAttemptAt: Int64, errorCode: String)
    /// Given up (attempts used up, or a refusal retrying cannot fix): token blanked.
    case failed(errorCode: String)
}

/// Revoke jobs for Apple refresh tokens: queued by the erasure, sent by the revoke thread.
public protocol AppleRevokeJobRepository: Sendable {
    /// Claims up to `limit` due jobs, leased until `now + leaseMs` (two instances never get
    /// one job at a time).
    func claimDueRevokeJobs(now: Int64, limit: Int, leaseMs: Int64) throws -> [AppleRevokeJob]
    /// Records the attempt `attempts` (1-based) of job `id`.
    func recordRevokeAttempt(id: String, attempts: Int, outcome: AppleRevokeOutcome, now: Int64) throws
    /// The earliest `next_attempt_at` of a pending job, or nil.
    func nextRevokeAttemptTime() throws -> Int64?
    /// Jobs waiting (pending) and given up (failed).
    func revokeJobCounts() throws -> (pending: Int, failed: Int)
    /// Deletes jobs that ended (done or given up) before `endedBefore` (ms since the epoch);
    /// pending jobs stay. Returns how many.
    func purgeRevokeJobs(endedBefore: Int64) throws -> Int
}

/// A sealed value as stored: where it is and the sealing row id it is bound to.
public struct SealedValue: Sendable, Equatable {
    /// The table holding it.
    public var table: String
    /// The row's key in that table (`sub`, job id, or `DeviceTokenSealing.rowID` for `device_tokens`).
    public var rowKey: String
    /// The sealing context's table, column and row id.
    public var contextTable: String
    /// The sealing context's column.
    public var contextColumn: String
    /// The sealing context's row id.
    public var contextRowID: String
    /// The envelope.
    public var envelope: String

    /// A sealed value found by `sealedValues()`.
    public init(
        table: String, rowKey: String, contextTable: String, contextColumn: String, contextRowID: String, envelope: String
    ) {
        self.table = table
        self.rowKey = rowKey
        self.contextTable = contextTable
        self.contextColumn = contextColumn
        self.contextRowID = contextRowID
        self.envelope = envelope
    }
}

/// The sealed columns, for the start-up key check and `suplash-server reseal`.
public protocol SealedValueRepository: Sendable {
    /// The key ids named by stored envelopes (`s1.<keyId>.…`).
    func sealedKeyIDs() throws -> Set<String>
    /// Every stored envelope with where it lives.
    func sealedValues() throws -> [SealedValue]
    /// Replaces `value`'s envelope by `envelope` (and, for device tokens, the blind index by
    /// `blindIndex`) when the row still holds `value.envelope`; false when it changed meanwhile.
    func replaceSealedValue(_ value: SealedValue, with envelope: String, blindIndex: String?) throws -> Bool
    /// Device token rows still holding their plaintext (written before tokens were sealed),
    /// at most `limit`, in key order (user, device, push type) after `after`'s key (from the
    /// first when nil) — so a caller reads them in bounded batches and a row it leaves
    /// unsealed is not read again.
    func plaintextDeviceTokens(after: PlaintextDeviceToken?, limit: Int) throws -> [PlaintextDeviceToken]
    /// In one transaction, stores each row's envelope and blind index and empties its
    /// plaintext, where the row still holds that plaintext; returns how many were sealed.
    func sealPlaintextDeviceTokens(_ sealed: [(PlaintextDeviceToken, SealedPushToken)]) throws -> Int
    /// Deletes every device token row still holding its plaintext (no sealing key is
    /// configured, so none is kept); returns how many.
    func dropPlaintextDeviceTokens() throws -> Int
    /// After plaintext was sealed or deleted: rewrites the database so no free page or log
    /// holds the old bytes (SQLite: `VACUUM`, then a truncating WAL checkpoint; PostgreSQL:
    /// `VACUUM` of `device_tokens`).
    func compactAfterSealing() throws
}

/// One of Apple's account events (spec §9), already verified.
public enum AppleAccountEvent: Sendable, Equatable {
    /// `email-disabled`: mail to the relay `email` is held, unless a newer `email-enabled`
    /// (by `eventTime`, Apple's `event_time`, ms since the epoch) was applied already.
    case emailDisabled(sub: String, email: String, eventTime: Int64)
    /// `email-enabled`: mail to the relay `email` is sent again, unless a newer
    /// `email-disabled` (by `eventTime`, ms) was applied already.
    case emailEnabled(sub: String, email: String, eventTime: Int64)
    /// `consent-revoked`: every session of the account is revoked; the link stays.
    case consentRevoked(sub: String)
    /// `account-delete`: the account is erased, without a revoke call.
    case accountDelete(sub: String)
}

/// What applying an account event did.
public enum AppleEventOutcome: Sendable, Equatable {
    /// The `jti` was applied before: nothing changed.
    case duplicate
    /// No account is linked to the event's `sub` (the `jti` is remembered).
    case unknownAccount
    /// Mail to the address is held or released.
    case mailHold(held: Bool)
    /// The sessions of `userID` revoked (their ids).
    case sessionsRevoked(userID: String, sessionIDs: [String])
    /// The account `userID` erased.
    case accountErased(userID: String)
}

/// Apple's account events: each applied once, by `jti`, in one transaction.
public protocol AppleAccountEventRepository: Sendable {
    /// Applies `event` unless `jti` was seen; remembers `jti`.
    func applyAppleEvent(jti: String, event: AppleAccountEvent, now: Int64) throws -> AppleEventOutcome
    /// Forgets the `jti`s received before `receivedBefore` (ms since the epoch); returns how many.
    func forgetAppleEvents(receivedBefore: Int64) throws -> Int
}

/// How long the Apple lifecycle keeps its bookkeeping (docs/apple.md, "Retention").
public enum AppleRetention {
    /// A `jti` is remembered 8 days: past the 7 days an event's `iat` may be old, so an older
    /// repeat is refused by its `iat`.
    public static let eventMs: Int64 = 8 * 86_400_000
    /// A revoke job that ended (done or given up, its token blanked) is kept 30 days for the
    /// operator (`last_error`), like the push outbox keeps sent rows for a while.
    public static let revokeJobMs: Int64 = 30 * 86_400_000
}
