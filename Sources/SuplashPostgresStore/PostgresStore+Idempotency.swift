import SuplashDomain
import SuplashJSON
import SuplashPostgres
import SuplashStoreRows

/// Idempotency-Key requests (spec §7), shared by every instance on the database: a retry
/// that lands on another instance replays the same first response, and a duplicate that
/// lands on another instance while the first still runs gets 409 (the claim is a row).
extension PostgresStore: IdempotencyRepository {
    public func idempotencyRecord(caller: String, key: String, now: Int64) throws -> IdempotencyRecord? {
        try read { c in
            guard
                let row = try c.query(
                    """
                    SELECT fingerprint, status, headers, body, expires_at FROM idempotency_records
                    WHERE caller = $1 AND idempotency_key = $2 AND expires_at > $3 AND status > 0
                    """, [.text(caller), .text(key), .integer(now)]
                ).first
            else { return nil }
            return Self.idempotencyRecord(row)
        }
    }

    static func idempotencyRecord(_ row: PostgresRow) -> IdempotencyRecord {
        var headers: [[String]] = []
        if let text = row["headers"].text, case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) {
            for item in items {
                if case .array(let pair) = item, pair.count == 2, let n = pair[0].stringValue, let v = pair[1].stringValue {
                    headers.append([n, v])
                }
            }
        }
        return IdempotencyRecord(
            fingerprint: row["fingerprint"].bytes ?? [], status: Int(row["status"].int64 ?? 500),
            headers: headers, body: row["body"].bytes ?? [],
            expiresAt: row["expires_at"].int64 ?? 0)
    }

    /// Stores or replaces the record (SQLite's `INSERT OR REPLACE`).
    public func saveIdempotencyRecord(caller: String, key: String, record: IdempotencyRecord, now: Int64) throws {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        _ = try write { tx in
            try tx.connection.update(
                """
                INSERT INTO idempotency_records
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT (caller, idempotency_key) DO UPDATE SET
                    fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, headers = EXCLUDED.headers,
                    body = EXCLUDED.body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
                """,
                [
                    .text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)),
                    .text(headers), .blob(record.body), .integer(now), .integer(record.expiresAt),
                ])
        }
    }

    public func purgeIdempotencyRecords(now: Int64) throws -> Int {
        try write { tx in
            try tx.connection.update("DELETE FROM idempotency_records WHERE expires_at <= $1", [.integer(now)])
        }
    }

    /// Claims the key with two autocommit statements at READ COMMITTED (each durable before
    /// the next; no transaction is held open while the request runs).
    ///
    /// Why two instances cannot both proceed: the claim is `INSERT … ON CONFLICT (caller,
    /// idempotency_key) DO UPDATE … WHERE expires_at <= now`. The primary key admits one row
    /// per (caller, key). When a concurrent claimer has inserted the row but not committed,
    /// the second `INSERT` waits for it (speculative insertion waits on the conflicting
    /// transaction); then it locks the committed row and evaluates the `WHERE` on that latest
    /// version, whose lease has not expired, so nothing is returned — the documented
    /// guarantee of `ON CONFLICT DO UPDATE` is exactly one of insert or update, even at READ
    /// COMMITTED. Only an expired row (an old record, or a crashed instance's claim whose
    /// lease ended) is taken over, and that takeover is itself row-locked, so two takeovers
    /// serialise and the second sees the first's fresh lease. The loser then reads the row
    /// (a new statement, a new snapshot: it sees the winner's commit). If that row vanished
    /// in between (the winner abandoned, or the purge ran), the claim is tried again.
    public func claimIdempotencyKey(
        caller: String, key: String, fingerprint: [UInt8], now: Int64,
        leaseUntil: Int64
    ) throws -> IdempotencyClaim {
        for _ in 0..<4 {
            let outcome: IdempotencyClaim? = try read { c in
                let claimed = try c.query(
                    """
                    INSERT INTO idempotency_records AS r
                        (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                    VALUES ($1, $2, $3, 0, '[]', $4, $5, $6)
                    ON CONFLICT (caller, idempotency_key) DO UPDATE SET
                        fingerprint = EXCLUDED.fingerprint, status = 0, headers = '[]', body = EXCLUDED.body,
                        created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
                    WHERE r.expires_at <= EXCLUDED.created_at
                    RETURNING created_at
                    """, [.text(caller), .text(key), .blob(fingerprint), .blob([]), .integer(now), .integer(leaseUntil)])
                if !claimed.isEmpty { return .claimed(token: now) }
                guard
                    let row = try c.query(
                        """
                        SELECT fingerprint, status, headers, body, expires_at FROM idempotency_records
                        WHERE caller = $1 AND idempotency_key = $2 AND expires_at > $3
                        """, [.text(caller), .text(key), .integer(now)]
                    ).first
                else { return nil }
                return (row["status"].int64 ?? 0) == 0 ? .running : .completed(Self.idempotencyRecord(row))
            }
            if let outcome { return outcome }
        }
        // The row keeps appearing and vanishing: another request is busy with this key.
        return .running
    }

    public func completeIdempotencyKey(caller: String, key: String, token: Int64, record: IdempotencyRecord) throws {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        _ = try read { c in
            try c.update(
                """
                INSERT INTO idempotency_records AS r
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT (caller, idempotency_key) DO UPDATE SET
                    fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, headers = EXCLUDED.headers,
                    body = EXCLUDED.body, expires_at = EXCLUDED.expires_at
                WHERE r.status = 0 AND r.created_at = EXCLUDED.created_at
                """,
                [
                    .text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)),
                    .text(headers), .blob(record.body), .integer(token), .integer(record.expiresAt),
                ])
        }
    }

    public func abandonIdempotencyKey(caller: String, key: String, token: Int64) throws {
        _ = try read { c in
            try c.update(
                """
                DELETE FROM idempotency_records
                WHERE caller = $1 AND idempotency_key = $2 AND status = 0 AND created_at = $3
                """, [.text(caller), .text(key), .integer(token)])
        }
    }
}

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
