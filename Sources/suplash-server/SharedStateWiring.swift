import SuplashAPI
import SuplashCrypto
import SuplashDomain
import SuplashLogging
import SuplashPostgresStore

/// What several instances on one PostgreSQL database must share: the
/// Idempotency-Key claims and the rate-limit buckets. On SQLite (one process) both stay in
/// memory.
enum SharedStateWiring {
    /// Whether `store` may be shared by several server processes (PostgreSQL).
    static func isShared(_ store: any SuplashStore) -> Bool {
        store is PostgresStore
    }

    /// The database buckets selected by `ratelimit.store`: `memory` → nil; `database` →
    /// the store's `rate_limit_buckets` (PostgreSQL only); `auto` (default) → `database` on
    /// PostgreSQL, `memory` on SQLite. Bucket names are HMACs under a key derived from
    /// the JWT secret (which every instance shares already).
    /// - Throws: `Settings.LoadError` for `database` on SQLite.
    static func rateLimitBuckets(
        _ settings: Settings, store: any SuplashStore, secret: [UInt8],
        logger: Logger
    ) throws -> SharedRateLimitBuckets? {
        let choice = settings.ratelimit.store
        let repository = store as? any RateLimitBucketRepository
        switch choice {
        case .memory:
            return nil
        case .auto, .database:
            guard let repository, isShared(store) else {
                if choice == .database {
                    throw Settings.LoadError(description: "ratelimit.store=database needs storage.driver=postgres")
                }
                return nil
            }
            let key = HMACSHA256.authenticationCode(key: secret, message: Array("suplash rate limit buckets v1".utf8))
            return SharedRateLimitBuckets(repository: repository, key: key, logger: logger)
        }
    }
}
