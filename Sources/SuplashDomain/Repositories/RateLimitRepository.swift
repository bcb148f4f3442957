/// One token taken from a shared rate-limit bucket (spec §7).
public struct RateLimitTake: Sendable, Equatable {
    /// Whether a token was available (the request may proceed).
    public var allowed: Bool
    /// Tokens left in the bucket after this request (fractional; ≥ 0).
    public var tokens: Double

    /// - Parameters: `tokens`: tokens left after the take (≥ 0).
    public init(allowed: Bool, tokens: Double) {
        self.allowed = allowed
        self.tokens = tokens
    }
}

/// Token buckets shared by every server instance on one database (spec §7 rate limits, and
/// the failed-login budget per account), so N instances behind a balancer give a client
/// the budget of one.
///
/// Buckets are named by an opaque digest chosen by the caller (an HMAC of the layer and
/// the client address, device, user or email — never the raw key). Elapsed time is measured
/// with the database's clock, so instances with skewed clocks agree.
public protocol RateLimitBucketRepository: Sendable {
    /// Refills bucket `bucket` (continuously, `capacity` tokens per `windowSeconds`, never
    /// above `capacity`; a new bucket starts full) and takes one token if at least one is
    /// there — one atomic statement.
    /// - Parameters:
    ///   - capacity: tokens in a full bucket (≥ 1).
    ///   - windowSeconds: seconds to refill an empty bucket completely (> 0).
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func takeRateLimitToken(bucket: [UInt8], capacity: Int, windowSeconds: Double) throws -> RateLimitTake
    /// Puts one token back (never above `capacity`); a missing bucket is left missing (it is full).
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func returnRateLimitToken(bucket: [UInt8], capacity: Int) throws
    /// Deletes buckets that have been idle long enough to be full again (they carry no
    /// information); returns how many.
    /// - Throws: `RepositoryError.unavailable` when the store cannot be reached.
    func purgeRateLimitBuckets() throws -> Int
}
