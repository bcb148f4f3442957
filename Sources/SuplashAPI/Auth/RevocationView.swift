import Foundation

/// The in-memory view of revoked sessions that every authenticated request consults
/// (spec §3: revocation takes effect at once). It is filled from the database at
/// start-up (sessions revoked within one access-token lifetime) and updated by the
/// code paths that revoke (logout, refresh-token reuse, password reset, account deletion),
/// after their write has committed.
///
/// Besides single sessions it holds erased accounts (every token refused) and per-user
/// cut-offs: "access tokens of user X issued before T are revoked" (password reset revokes
/// every session of a user at once).
public final class RevocationView: @unchecked Sendable {
    // Guarded by `lock`.
    private var revokedSessions: Set<String>
    // Guarded by `lock`: erased accounts.
    private var revokedUsers: Set<String>
    // Guarded by `lock`: user id → Unix seconds; that user's access tokens with `iat` before it
    // are revoked. At most one entry per user, so bounded by the number of users.
    private var userCutoffs: [String: Int64] = [:]
    private let lock = NSLock()

    /// - Parameters:
    ///   - revokedSessions: session ids revoked within one access-token lifetime.
    ///   - revokedUsers: ids of accounts erased within one access-token lifetime.
    public init(revokedSessions: [String] = [], revokedUsers: [String] = []) {
        self.revokedSessions = Set(revokedSessions)
        self.revokedUsers = Set(revokedUsers)
    }

    /// Adds what the database reports as revoked (the same reads as at start-up): used when an
    /// instance may have missed revocations broadcast by others (its PostgreSQL listener
    /// reconnected). Only adds — a revoked session or erased account never comes back — so
    /// revocations applied meanwhile are kept.
    /// - Parameters:
    ///   - revokedSessions: session ids revoked within one access-token lifetime.
    ///   - revokedUsers: ids of accounts erased within one access-token lifetime.
    public func merge(revokedSessions: [String], revokedUsers: [String]) {
        lock.withLock {
            self.revokedSessions.formUnion(revokedSessions)
            self.revokedUsers.formUnion(revokedUsers)
        }
    }

    /// True when the account `id` was erased (every token of it is refused).
    public func isRevoked(userID id: String) -> Bool {
        lock.withLock { revokedUsers.contains(id) }
    }

    /// Refuses every token of user `id` from now on (account deletion).
    public func revoke(userID id: String) {
        _ = lock.withLock { revokedUsers.insert(id) }
    }

    /// True when the session `id` was revoked.
    public func isRevoked(sessionID id: String) -> Bool {
        lock.withLock { revokedSessions.contains(id) }
    }

    /// Marks session `id` revoked.
    public func revoke(sessionID id: String) {
        _ = lock.withLock { revokedSessions.insert(id) }
    }

    /// Revokes every access token of `userID` whose `iat` (Unix seconds) is before `seconds`.
    /// Tokens issued within the cut-off second itself are covered by revoking their sessions
    /// (`revoke(sessionID:)`), which the password-reset write reports.
    public func revokeUser(_ userID: String, issuedBefore seconds: Int64) {
        lock.withLock { userCutoffs[userID] = max(userCutoffs[userID] ?? seconds, seconds) }
    }

    /// True when an access token of `userID` issued at `issuedAt` (Unix seconds) falls under
    /// a per-user cut-off.
    public func isRevoked(userID: String, issuedAt: Int64) -> Bool {
        lock.withLock { userCutoffs[userID].map { issuedAt < $0 } ?? false }
    }
}
