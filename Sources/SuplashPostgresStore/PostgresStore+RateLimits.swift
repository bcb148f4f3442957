import SuplashDomain
import SuplashPostgres

/// Shared token buckets (spec §7 rate limits across instances) in the UNLOGGED table
/// `rate_limit_buckets`: one statement per take, timed by the database clock.
extension PostgresStore: RateLimitBucketRepository {
    /// One `INSERT … ON CONFLICT DO UPDATE … RETURNING` in autocommit: the row lock makes
    /// concurrent takes on one bucket (from any instance) apply one after the other, each
    /// on the latest committed tokens. The table is UNLOGGED: no WAL, so the commit waits
    /// for no flush; after a database crash the buckets are empty — every client starts
    /// with a full budget, which is what an idle bucket means anyway.
    public func takeRateLimitToken(bucket: [UInt8], capacity: Int, windowSeconds: Double) throws -> RateLimitTake {
        try read { c in
            guard
                let row = try c.query(
                    """
                    WITH clock AS (SELECT extract(epoch FROM statement_timestamp())::double precision AS now)
                    INSERT INTO rate_limit_buckets AS b (bucket, tokens, allowed, updated_at, expires_at)
                    SELECT $1, $2::double precision - 1, TRUE, clock.now, clock.now + $3::double precision FROM clock
                    ON CONFLICT (bucket) DO UPDATE SET
                        tokens = CASE
                            WHEN LEAST($2::double precision, b.tokens + GREATEST(0, EXCLUDED.updated_at - b.updated_at)
                                       * ($2::double precision / $3::double precision)) >= 1
                            THEN LEAST($2::double precision, b.tokens + GREATEST(0, EXCLUDED.updated_at - b.updated_at)
                                       * ($2::double precision / $3::double precision)) - 1
                            ELSE LEAST($2::double precision, b.tokens + GREATEST(0, EXCLUDED.updated_at - b.updated_at)
                                       * ($2::double precision / $3::double precision))
                            END,
                        allowed = LEAST($2::double precision, b.tokens + GREATEST(0, EXCLUDED.updated_at - b.updated_at)
                                        * ($2::double precision / $3::double precision)) >= 1,
                        updated_at = EXCLUDED.updated_at,
                        expires_at = EXCLUDED.expires_at
                    RETURNING tokens, allowed
                    """, [.blob(bucket), .real(Double(max(1, capacity))), .real(windowSeconds)]
                ).first
            else {
                throw RepositoryError.unavailable
            }
            return RateLimitTake(allowed: (row["allowed"].int64 ?? 0) != 0, tokens: max(0, row["tokens"].double ?? 0))
        }
    }

    public func returnRateLimitToken(bucket: [UInt8], capacity: Int) throws {
        _ = try read { c in
            try c.update(
                "UPDATE rate_limit_buckets SET tokens = LEAST($2::double precision, tokens + 1) WHERE bucket = $1",
                [.blob(bucket), .real(Double(max(1, capacity)))])
        }
    }

    /// A bucket is full again at most one window after its last take (`expires_at`).
    public func purgeRateLimitBuckets() throws -> Int {
        try read { c in
            try c.update("DELETE FROM rate_limit_buckets WHERE expires_at <= extract(epoch FROM statement_timestamp())")
        }
    }
}
