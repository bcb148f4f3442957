import Foundation

/// The in-memory view of revoked sessions that every authenticated request consults
/// (spec §3: revocation takes effect at once). It is filled from the database at
/// start-up (sessions revoked within one access-token lifetime) and updated by the
/// code paths that revoke (logout, refresh-token reuse, account deletion; later password
/// reset), after their write has committed. An erased account revokes every token of its
/// user at once.
public final class RevocationView: @unchecked Sendable {
    // Guarded by `lock`.
    private var revokedSessions: Set<String>
    // Guarded by `lock`.
    private var revokedUsers: Set<String>
    private let lock = NSLock()

    /// - Parameters:
    ///   - revokedSessions: session ids revoked within one access-token lifetime.
    ///   - revokedUsers: ids of accounts erased within one access-token lifetime.
    public init(revokedSessions: [String] = [], revokedUsers: [String] = []) {
        self.revokedSessions = Set(revokedSessions)
        self.revokedUsers = Set(revokedUsers)
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
}
