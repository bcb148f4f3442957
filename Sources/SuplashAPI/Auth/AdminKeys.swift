import Foundation
import SuplashCrypto
import SuplashDomain

/// Admin API keys (spec §3, §8): `sk_admin_` + base64url(32 random bytes). Only the
/// SHA-256 is stored; with 256 bits of entropy a pepper or slow hash adds nothing.
public enum AdminKeyFormat {
    public static let prefix = "sk_admin_"

    /// A new key and its stored hash.
    public static func generate() -> (key: String, hash: [UInt8]) {
        let key = prefix + Base64URL.encode(SecureRandom.bytes(32))
        return (key, SHA256.hash(Array(key.utf8)))
    }
}

/// The server's cache of active admin-key hashes. It re-reads the table when older
/// than `maxAge` seconds, so a key created or revoked by the CLI — another process —
/// is honoured within a second.
public final class AdminKeyCache: @unchecked Sendable {
    private let repository: any AdminKeyRepository
    private let maxAge: Double
    // Guarded by `lock`.
    private var keys: [(hash: [UInt8], name: String)] = []
    private var loadedAt: Double = -Double.infinity
    // Guarded by `lock`: bumped by `invalidate()`, so a read that began before it is not cached.
    private var generation = 0
    private let lock = NSLock()

    /// - Parameter maxAge: seconds a snapshot may be used (default 0.5).
    public init(repository: any AdminKeyRepository, maxAge: Double = 0.5) {
        self.repository = repository
        self.maxAge = maxAge
    }

    /// The name of the active key `presented`, or nil. Compares hashes in constant time.
    /// - Throws: `RepositoryError.unavailable` when the table cannot be read.
    public func name(forKey presented: String) throws -> String? {
        let hash = SHA256.hash(Array(presented.utf8))
        let snapshot = try current()
        var found: String?
        for entry in snapshot where constantTimeEquals(entry.hash, hash) {
            found = entry.name
        }
        return found
    }

    /// Forgets the snapshot, so the next request re-reads the table: a key was created or
    /// revoked (on PostgreSQL, another instance or the CLI said so through `NOTIFY`).
    public func invalidate() {
        lock.withLock {
            generation += 1
            loadedAt = -Double.infinity
        }
    }

    private func current() throws -> [(hash: [UInt8], name: String)] {
        let now = ProcessInfo.processInfo.systemUptime
        let (fresh, startedAt) = lock.withLock { (now - loadedAt < maxAge ? keys : nil, generation) }
        if let fresh { return fresh }
        let loaded = try repository.activeAdminKeyHashes()
        lock.withLock {
            if generation == startedAt {
                keys = loaded
                loadedAt = now
            }
        }
        return loaded
    }
}
