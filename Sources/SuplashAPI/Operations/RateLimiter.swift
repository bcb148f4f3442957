import Foundation
import SuplashCrypto
import SuplashDomain
import SuplashLogging

/// Where the buckets of every layer live when they are shared by several server instances
/// (`ratelimit.store = database`): a `RateLimitBucketRepository` (PostgreSQL), one
/// statement per layer per request.
///
/// Bucket names are HMAC-SHA-256 under `key` of the layer name and the client key (address,
/// device, user id or email), so the database never holds a raw address or email.
/// When the repository fails, the limiter fails *open to the local bucket*: the request is
/// decided by the layer's in-memory bucket (per instance, as with `memory`), a warning with
/// the error type is logged at most once a minute per layer, and the layer stays on its
/// local buckets for `RateLimitLayer.sharedRetrySeconds` (5 s) before trying the database
/// again (so an outage does not cost every request a failed round trip). A limiter outage
/// must not take the API down, and the API stays limited per instance meanwhile.
///
/// Idle buckets are deleted by `purgeRateLimitBuckets` at most every `purgeIntervalSeconds`
/// (default 300 s), started by a take on whichever instance notices first (deletes are
/// idempotent, so instances overlapping is harmless).
///
/// `@unchecked Sendable`: `lastPurge` is guarded by `lock`.
public final class SharedRateLimitBuckets: @unchecked Sendable {
    let repository: any RateLimitBucketRepository
    private let key: HMACSHA256.Key
    let logger: Logger
    private let purgeInterval: Double
    private let lock = NSLock()
    private var lastPurge: Double
    private let queue = DispatchQueue(label: "suplash.rate-limit-purge", qos: .utility)

    /// - Parameters:
    ///   - key: HMAC key for bucket names (≥ 32 bytes; the same on every instance, e.g.
    ///     derived from the JWT secret, or budgets would not be shared).
    ///   - purgeIntervalSeconds: seconds between purges of idle buckets by this instance.
    public init(
        repository: any RateLimitBucketRepository, key: [UInt8], logger: Logger,
        purgeIntervalSeconds: Double = 300
    ) {
        self.repository = repository
        self.key = HMACSHA256.Key(key)
        self.logger = logger
        self.purgeInterval = purgeIntervalSeconds
        self.lastPurge = RateLimits.now()
    }

    /// The bucket name of `clientKey` in layer `layer`: 32 bytes.
    func bucket(layer: String, clientKey: String) -> [UInt8] {
        key.authenticationCode(Array(layer.utf8) + [0] + Array(clientKey.utf8))
    }

    /// Starts a purge of idle buckets in the background when one is due.
    func purgeIfDue(now: Double) {
        let due = lock.withLock {
            guard now - lastPurge >= purgeInterval else { return false }
            lastPurge = now
            return true
        }
        guard due else { return }
        let repository = self.repository
        let logger = self.logger
        queue.async {
            do {
                let purged = try repository.purgeRateLimitBuckets()
                logger.debug("rate_limit_buckets_purged", .count("buckets", purged))
            } catch {
                logger.warning("rate_limit_purge_failed", .errorType(String(reflecting: type(of: error))))
            }
        }
    }
}

/// One rate-limit layer (spec §7): a token bucket per key, `limit` requests per `window`
/// seconds, refilled continuously. In memory: O(1) per request; memory bounded by evicting
/// buckets that have refilled completely (an idle bucket carries no information). With
/// `shared` buckets: one database statement per request (see `SharedRateLimitBuckets`).
public final class RateLimitLayer: @unchecked Sendable {
    /// The policy name in `RateLimit-Policy` (e.g. `"auth-ip"`).
    public let name: String
    /// Requests allowed per window.
    public let limit: Int
    /// Window length in seconds.
    public let window: Double
    private let maxKeys: Int
    private let shards: [Shard]
    /// Buckets in the database (several instances), or nil for in-memory buckets only.
    public let shared: SharedRateLimitBuckets?
    /// Seconds a layer uses its local buckets after a shared-bucket failure.
    public static let sharedRetrySeconds: Double = 5
    // Guarded by `failureLock`: when the last shared-bucket failure was logged, and until
    // when the shared buckets are skipped (monotonic seconds).
    private let failureLock = NSLock()
    private var lastWarning = -Double.infinity
    private var localUntil = -Double.infinity

    private final class Shard: @unchecked Sendable {
        // Guarded by `lock`.
        var buckets: [String: Bucket] = [:]
        let lock = NSLock()
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    /// The outcome of one request against this layer.
    public struct Decision: Sendable {
        public var allowed: Bool
        /// Requests left in the window after this one.
        public var remaining: Int
        /// Seconds until a request will be allowed again (≥ 1 when limited) or until the
        /// bucket is full again (for the `RateLimit` header's `t`).
        public var resetSeconds: Int
    }

    /// - Parameters:
    ///   - limit: requests per `window` (≥ 1).
    ///   - window: seconds.
    ///   - maxKeys: keys kept before idle buckets are evicted.
    ///   - shared: database buckets shared by every instance (nil = in memory only).
    public init(name: String, limit: Int, window: Double, maxKeys: Int = 100_000, shared: SharedRateLimitBuckets? = nil) {
        self.name = name
        self.limit = max(1, limit)
        self.window = window
        self.maxKeys = maxKeys
        self.shards = (0..<16).map { _ in Shard() }
        self.shared = shared
    }

    /// Takes one token for `key`. In memory `now` is monotonic time in seconds; shared
    /// buckets use the database clock instead (and fall back to memory when it fails).
    /// Shared buckets block on a database round trip: call from a worker thread.
    public func take(_ key: String, now: Double) -> Decision {
        if let shared, failureLock.withLock({ now >= localUntil }) {
            do {
                let take = try shared.repository.takeRateLimitToken(
                    bucket: shared.bucket(layer: name, clientKey: key),
                    capacity: limit, windowSeconds: window)
                shared.purgeIfDue(now: now)
                return decision(allowed: take.allowed, tokens: take.tokens)
            } catch {
                warnSharedFailure(error, logger: shared.logger, now: now)
            }
        }
        return takeInMemory(key, now: now)
    }

    /// The decision for a bucket holding `tokens` after a take that was `allowed` (or not).
    private func decision(allowed: Bool, tokens: Double) -> Decision {
        let rate = Double(limit) / window
        let reset = allowed ? (Double(limit) - tokens) / rate : (1 - tokens) / rate
        return Decision(
            allowed: allowed, remaining: Int(tokens.rounded(.down)),
            resetSeconds: max(allowed ? 0 : 1, Int(reset.rounded(.up))))
    }

    private func warnSharedFailure(_ error: any Error, logger: Logger, now: Double) {
        let due = failureLock.withLock {
            localUntil = now + Self.sharedRetrySeconds
            guard now - lastWarning >= 60 else { return false }
            lastWarning = now
            return true
        }
        if due {
            logger.warning("rate_limit_store_failed", .errorType(String(reflecting: type(of: error))))
        }
    }

    private func takeInMemory(_ key: String, now: Double) -> Decision {
        let rate = Double(limit) / window
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        return shard.lock.withLock {
            var bucket = shard.buckets[key] ?? Bucket(tokens: Double(limit), updated: now)
            bucket.tokens = min(Double(limit), bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            if shard.buckets.count >= maxKeys / shards.count, shard.buckets[key] == nil {
                evictIdle(shard, now: now, rate: rate)
            }
            shard.buckets[key] = bucket
            return decision(allowed: allowed, tokens: bucket.tokens)
        }
    }

    /// Returns a token taken by `take` (used when a request did not count, e.g. a login
    /// that succeeded does not count as a failure).
    public func refund(_ key: String) {
        if let shared, failureLock.withLock({ RateLimits.now() >= localUntil }) {
            do {
                try shared.repository.returnRateLimitToken(bucket: shared.bucket(layer: name, clientKey: key), capacity: limit)
                return
            } catch {
                warnSharedFailure(error, logger: shared.logger, now: RateLimits.now())
            }
        }
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        shard.lock.withLock {
            if var bucket = shard.buckets[key] {
                bucket.tokens = min(Double(limit), bucket.tokens + 1)
                shard.buckets[key] = bucket
            }
        }
    }

    /// Keys currently tracked (for tests and metrics).
    public var trackedKeys: Int {
        shards.reduce(0) { sum, shard in sum + shard.lock.withLock { shard.buckets.count } }
    }

    private func evictIdle(_ shard: Shard, now: Double, rate: Double) {
        // Caller holds shard.lock.
        shard.buckets = shard.buckets.filter { _, b in b.tokens + (now - b.updated) * rate < Double(limit) }
        if shard.buckets.count >= maxKeys / shards.count {
            // Still full of active keys: drop the least recently updated half.
            let keep = shard.buckets.sorted { $0.value.updated > $1.value.updated }.prefix(maxKeys / shards.count / 2)
            shard.buckets = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }

    /// `RateLimit-Policy` item: `"name";q=limit;w=window` (IETF draft, structured fields).
    public var policyHeader: String { "\"\(name)\";q=\(limit);w=\(Int(window))" }

    /// `RateLimit` item: `"name";r=remaining;t=seconds`.
    public func header(_ d: Decision) -> String { "\"\(name)\";r=\(d.remaining);t=\(d.resetSeconds)" }
}

/// The layered limits of spec §7, all configurable: per client address on `/v1/auth/*`,
/// per address overall, per device (`X-Device-ID`), per user, and failed logins per
/// account (credential stuffing; keyed by the normalised email whether or not an account
/// exists, so a 429 reveals nothing).
public struct RateLimits: Sendable {
    public var authPerAddress: RateLimitLayer?
    public var perAddress: RateLimitLayer?
    public var perDevice: RateLimitLayer?
    public var perUser: RateLimitLayer?
    public var loginFailuresPerAccount: RateLimitLayer?
    /// Peers whose `X-Forwarded-For` is believed (exact IP text).
    public var trustedProxies: Set<String>
    /// Whether the buckets live in the database (then the address and device layers are
    /// checked on a worker thread, not on the event loop).
    public var isShared: Bool

    /// Limits in requests: auth per address per hour, per address / device / user per
    /// minute, login failures per account per 15 minutes. 0 turns a layer off.
    /// `shared`: keep every layer's buckets in the database (`ratelimit.store = database`).
    public init(
        authPerAddressPerHour: Int = 120, perAddressPerMinute: Int = 1200, perDevicePerMinute: Int = 300,
        perUserPerMinute: Int = 600, loginFailuresPerAccountPer15Minutes: Int = 10,
        trustedProxies: Set<String> = [], shared: SharedRateLimitBuckets? = nil
    ) {
        func layer(_ name: String, _ limit: Int, _ window: Double) -> RateLimitLayer? {
            limit > 0 ? RateLimitLayer(name: name, limit: limit, window: window, shared: shared) : nil
        }
        isShared = shared != nil
        authPerAddress = layer("auth-ip", authPerAddressPerHour, 3600)
        perAddress = layer("ip", perAddressPerMinute, 60)
        perDevice = layer("device", perDevicePerMinute, 60)
        perUser = layer("user", perUserPerMinute, 60)
        loginFailuresPerAccount = layer("login-account", loginFailuresPerAccountPer15Minutes, 900)
        self.trustedProxies = trustedProxies
    }

    /// No limits at all (benchmarks, tests).
    public static let disabled = RateLimits(
        authPerAddressPerHour: 0, perAddressPerMinute: 0, perDevicePerMinute: 0,
        perUserPerMinute: 0, loginFailuresPerAccountPer15Minutes: 0)

    /// The client address: the socket peer, or — only when the peer is a trusted proxy —
    /// the right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
    public func clientAddress(peer: String, forwardedFor: String?) -> String {
        guard trustedProxies.contains(peer), let forwardedFor else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trustedProxies.contains(hop) { return hop }
        return peer
    }

    /// Monotonic seconds.
    public static func now() -> Double { ProcessInfo.processInfo.systemUptime }
}

/// What the limits decided for one request: the headers to add, and the 429 if limited.
struct RateLimitOutcome {
    var headers: [(String, String)] = []
    var limited: APIError?

    /// Applies `decision` of `layer`; the first limiting layer wins, and the headers name
    /// the most constraining layer so far.
    mutating func apply(_ layer: RateLimitLayer, _ decision: RateLimitLayer.Decision, tightest: inout Double) {
        let share = Double(decision.remaining) / Double(layer.limit)
        if share <= tightest || !decision.allowed {
            tightest = share
            headers = [("RateLimit-Policy", layer.policyHeader), ("RateLimit", layer.header(decision))]
        }
        if !decision.allowed, limited == nil {
            limited = APIError(
                .rateLimited, detail: "Too many requests; retry after the time in Retry-After.",
                headers: [("Retry-After", String(decision.resetSeconds))])
        }
    }
}
