import Foundation

/// The in-memory view of revoked sessions that every authenticated request consults
/// (spec §3: revocation takes effect at once). It is filled from the database at
/// start-up (sessions revoked within one access-token lifetime) and updated by the
/// code paths that revoke (logout, refresh-token reuse; later password reset and
/// account deletion), after their write has committed.
public final class RevocationView: @unchecked Sendable {
    // Guarded by `lock`.
    private var revokedSessions: Set<String>
    private let lock = NSLock()

    public init(revokedSessions: [String] = []) {
        self.revokedSessions = Set(revokedSessions)
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
