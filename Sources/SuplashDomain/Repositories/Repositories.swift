/// Errors a repository reports in domain terms; the API maps each to one problem
/// (spec §2) in a single place.
public enum RepositoryError: Error, Sendable, Equatable {
    /// No such document for this user (404).
    case notFound
    /// The email is already registered (409 `email_taken`).
    case emailTaken
    /// A unique conflict with a stable code, e.g. `entry_exists`, `entry_deleted`,
    /// `admin_key_exists` (409).
    case conflict(code: String)
    /// `If-Match` did not match the current version (412).
    case preconditionFailed
    /// The store could not be reached or failed, for a reason it did not classify (503
    /// `unavailable`).
    case unavailable
    /// The store failed for a classified reason (spec §2): 503 `unavailable` with
    /// `Retry-After` for transient kinds, 503 `storage_failed` without it for permanent ones.
    case storage(StorageFailure)
}

/// A user as stored: the public profile plus the credential (never serialised).
public struct StoredUser: Sendable {
    public var profile: UserProfile
    /// Argon2id PHC string, or nil for accounts without a password.
    public var passwordHash: String?

    public init(profile: UserProfile, passwordHash: String?) {
        self.profile = profile
        self.passwordHash = passwordHash
    }
}

/// A new login session with its first refresh token (spec §3).
public struct NewSession: Sendable {
    /// Random id, carried in access tokens as `sid`.
    public var id: String
    public var userID: String
    /// SHA-256 of the refresh token (the token itself is never stored).
    public var refreshTokenHash: [UInt8]
    /// ms since the epoch.
    public var createdAt: Int64
    /// ms since the epoch.
    public var refreshExpiresAt: Int64

    public init(id: String, userID: String, refreshTokenHash: [UInt8], createdAt: Int64, refreshExpiresAt: Int64) {
        self.id = id
        self.userID = userID
        self.refreshTokenHash = refreshTokenHash
        self.createdAt = createdAt
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// What presenting a refresh token did (spec §3 rotation and reuse detection).
public enum RefreshOutcome: Sendable, Equatable {
    /// The token was current: it is now spent and `newHash` is the session's token.
    case rotated(sessionID: String, userID: String)
    /// The token had already been rotated: the whole session family is now revoked.
    case reused(sessionID: String, userID: String)
    /// The session was revoked earlier (logout, reset, reuse).
    case revoked
    /// The token is past its expiry.
    case expired
    /// No such token.
    case unknown
}

/// Users and their profiles (`users/{uid}`).
public protocol UserRepository: Sendable {
    /// Inserts a new user and its first session in one durable commit.
    /// - Throws: `RepositoryError.emailTaken`.
    func createUser(_ profile: UserProfile, passwordHash: String, session: NewSession) throws -> UserProfile
    /// The user with `id`, or nil.
    func user(id: String) throws -> StoredUser?
    /// The user with the (normalised) `email`, or nil.
    func user(email: String) throws -> StoredUser?
    /// Replaces the password hash of `userID` with `newHash` if it is still `currentHash`
    /// (a login re-hashing under new Argon2id parameters; a concurrent reset wins). The profile
    /// document, its version and change position are untouched. One durable write.
    /// - Returns: whether the hash was replaced.
    @discardableResult
    func replacePasswordHash(userID: String, currentHash: String, newHash: String) throws -> Bool
    /// Reads the profile, applies `transform` and stores the result with `updatedAt = now`
    /// and `version + 1`, all in one write transaction. A throwing transform writes nothing.
    /// - Throws: `RepositoryError.notFound`, or what `transform` throws.
    func updateProfile(
        userID: String, now: Int64,
        _ transform: @escaping @Sendable (UserProfile) throws -> UserProfile
    ) throws -> UserProfile
    /// Users ordered by id (UUIDv7, so by creation), after `afterID`, optionally only the
    /// one with `email`; at most `limit`.
    func listUsers(email: String?, afterID: String?, limit: Int) throws -> [UserProfile]
}

/// Login sessions and refresh tokens (spec §3).
public protocol SessionRepository: Sendable {
    /// Stores a new session (login).
    func createSession(_ session: NewSession) throws
    /// Presents a refresh token: rotates it to `newHash` when current, revokes the session
    /// family when it was already rotated. One durable write.
    func rotateRefreshToken(hash: [UInt8], newHash: [UInt8], now: Int64, newExpiresAt: Int64) throws -> RefreshOutcome
    /// Revokes the session owning the refresh token `hash` (whether or not it was rotated);
    /// returns the session id, or nil for an unknown token.
    func revokeSession(refreshTokenHash hash: [UInt8], now: Int64) throws -> String?
    /// Revokes session `id` (of `userID`); false when there is no such session.
    @discardableResult
    func revokeSession(id: String, userID: String, now: Int64) throws -> Bool
    /// Ids of sessions revoked at or after `since` (ms) — to rebuild the in-memory
    /// revocation view at start-up.
    func sessionsRevoked(since: Int64) throws -> [String]
}

/// An admin API key as listed by the CLI (the key itself is never stored).
public struct AdminKeyRecord: Sendable, Equatable {
    public var name: String
    /// ms since the epoch.
    public var createdAt: Int64
    /// ms since the epoch, or nil while active.
    public var revokedAt: Int64?

    public init(name: String, createdAt: Int64, revokedAt: Int64?) {
        self.name = name
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Admin API keys (spec §3, §8).
public protocol AdminKeyRepository: Sendable {
    /// Stores a key's SHA-256 under a unique `name`.
    /// - Throws: `RepositoryError.conflict(code: "admin_key_exists")`.
    func createAdminKey(name: String, keyHash: [UInt8], now: Int64) throws
    /// Every key, oldest first.
    func adminKeys() throws -> [AdminKeyRecord]
    /// Revokes the active key `name`; false when there is none.
    func revokeAdminKey(name: String, now: Int64) throws -> Bool
    /// Hashes of the active keys, with their names.
    func activeAdminKeyHashes() throws -> [(hash: [UInt8], name: String)]
}

/// The outcome of creating an entry (spec §4).
public enum EntryCreateOutcome: Sendable, Equatable {
    /// A new entry (201).
    case created(WaterEntry)
    /// The same id with identical content, or the same `healthKitUUID` (200).
    case existing(WaterEntry)
}

/// A keyset position in the entries list: the last row's sort key (loggedAt desc, id desc).
public struct EntryCursor: Sendable, Equatable {
    /// ms since the epoch.
    public var loggedAt: Int64
    public var id: String

    public init(loggedAt: Int64, id: String) {
        self.loggedAt = loggedAt
        self.id = id
    }
}

/// Water entries (`water_logs/{uid}/entries`).
public protocol WaterEntryRepository: Sendable {
    /// Creates an entry for `userID`, stamped `now`. Identical re-post of `id` or a live
    /// entry with the same `healthKitUUID` → `.existing`.
    /// - Throws: `RepositoryError.conflict(code: "entry_exists")` (same id, other content),
    ///   `.conflict(code: "entry_deleted")` (the id was deleted), `.notFound` (no such user).
    func createEntry(
        userID: String, id: String, content: WaterEntryContent, deviceID: String?,
        now: Int64
    ) throws -> EntryCreateOutcome
    /// The live entry, or nil (tombstones are nil too).
    func entry(userID: String, id: String) throws -> WaterEntry?
    /// Applies `transform` to the live entry's content in one write transaction; when
    /// `precondition` returns false for the current entry → `.preconditionFailed`.
    /// - Throws: `.notFound`, `.preconditionFailed`, or what `transform` throws.
    func updateEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool,
        _ transform: @escaping @Sendable (WaterEntryContent) throws -> WaterEntryContent
    ) throws -> WaterEntry
    /// Turns the live entry into a tombstone.
    /// - Throws: `.notFound`, `.preconditionFailed`.
    func deleteEntry(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (WaterEntry) -> Bool) throws
    /// Live entries newest first (loggedAt desc, id desc), `from` ≤ loggedAt < `to`
    /// (ms, either optional), strictly after `cursor`; at most `limit`.
    func listEntries(userID: String, from: Int64?, to: Int64?, after cursor: EntryCursor?, limit: Int) throws -> [WaterEntry]
}
