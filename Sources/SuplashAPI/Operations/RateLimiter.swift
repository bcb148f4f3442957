import Foundation

/// One rate-limit layer (spec §7): a token bucket per key, `limit` requests per `window`
/// seconds, refilled continuously. O(1) per request; memory bounded by evicting buckets
/// that have refilled completely (an idle bucket carries no information).
public final class RateLimitLayer: @unchecked Sendable {
    /// The policy name in `RateLimit-Policy` (e.g. `"auth-ip"`).
    public let name: String
    /// Requests allowed per window.
    public let limit: Int
    /// Window length in seconds.
    public let window: Double
    private let maxKeys: Int
    private let shards: [Shard]

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
    public init(name: String, limit: Int, window: Double, maxKeys: Int = 100_000) {
        self.name = name
        self.limit = max(1, limit)
        self.window = window
        self.maxKeys = maxKeys
        self.shards = (0..<16).map { _ in Shard() }
    }

    /// Takes one token for `key` at monotonic time `now` (seconds).
    public func take(_ key: String, now: Double) -> Decision {
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
            let reset = allowed ? (Double(limit) - bucket.tokens) / rate : (1 - bucket.tokens) / rate
            return Decision(allowed: allowed, remaining: Int(bucket.tokens.rounded(.down)),
                            resetSeconds: max(allowed ? 0 : 1, Int(reset.rounded(.up))))
        }
    }

    /// Returns a token taken by `take` (used when a request did not count, e.g. a login
    /// that succeeded does not count as a failure).
    public func refund(_ key: String) {
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

    /// Limits in requests: auth per address per hour, per address / device / user per
    /// minute, login failures per account per 15 minutes. 0 turns a layer off.
    public init(authPerAddressPerHour: Int = 120, perAddressPerMinute: Int = 1200, perDevicePerMinute: Int = 300,
                perUserPerMinute: Int = 600, loginFailuresPerAccountPer15Minutes: Int = 10,
                trustedProxies: Set<String> = []) {
        func layer(_ name: String, _ limit: Int, _ window: Double) -> RateLimitLayer? {
            limit > 0 ? RateLimitLayer(name: name, limit: limit, window: window) : nil
        }
        authPerAddress = layer("auth-ip", authPerAddressPerHour, 3600)
        perAddress = layer("ip", perAddressPerMinute, 60)
        perDevice = layer("device", perDevicePerMinute, 60)
        perUser = layer("user", perUserPerMinute, 60)
        loginFailuresPerAccount = layer("login-account", loginFailuresPerAccountPer15Minutes, 900)
        self.trustedProxies = trustedProxies
    }

    /// No limits at all (benchmarks, tests).
    public static let disabled = RateLimits(authPerAddressPerHour: 0, perAddressPerMinute: 0, perDevicePerMinute: 0,
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
            limited = APIError(status: 429, code: "rate_limited", title: "Too Many Requests",
                               detail: "Too many requests; retry after the time in Retry-After.",
                               headers: [("Retry-After", String(decision.resetSeconds))])
        }
    }
}
