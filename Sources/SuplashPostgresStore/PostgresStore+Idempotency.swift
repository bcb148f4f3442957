import SuplashDomain
import SuplashJSON
import SuplashPostgres
import SuplashStorage
import SuplashStoreRows

/// Completed Idempotency-Key requests (spec §7), shared by every instance on the database:
/// a retry that lands on another instance replays the same first response.
extension PostgresStore: IdempotencyRepository {
    public func idempotencyRecord(caller: String, key: String, now: Int64) throws -> IdempotencyRecord? {
        try read { c in
            guard let row = try c.query("""
                SELECT fingerprint, status, headers, body, expires_at FROM idempotency_records
                WHERE caller = $1 AND idempotency_key = $2 AND expires_at > $3
                """, [.text(caller), .text(key), .integer(now)]).first else { return nil }
            var headers: [[String]] = []
            if let text = row["headers"].text, case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) {
                for item in items {
                    if case .array(let pair) = item, pair.count == 2, let n = pair[0].stringValue, let v = pair[1].stringValue {
                        headers.append([n, v])
                    }
                }
            }
            return IdempotencyRecord(fingerprint: row["fingerprint"].bytes ?? [], status: Int(row["status"].int64 ?? 500),
                                     headers: headers, body: row["body"].bytes ?? [],
                                     expiresAt: row["expires_at"].int64 ?? 0)
        }
    }

    /// Stores or replaces the record (SQLite's `INSERT OR REPLACE`).
    public func saveIdempotencyRecord(caller: String, key: String, record: IdempotencyRecord, now: Int64) throws {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        _ = try write { tx in
            try tx.connection.update("""
                INSERT INTO idempotency_records
                    (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT (caller, idempotency_key) DO UPDATE SET
                    fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, headers = EXCLUDED.headers,
                    body = EXCLUDED.body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
                """, [.text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)),
                      .text(headers), .blob(record.body), .integer(now), .integer(record.expiresAt)])
        }
    }

    public func purgeIdempotencyRecords(now: Int64) throws -> Int {
        try write { tx in
            try tx.connection.update("DELETE FROM idempotency_records WHERE expires_at <= $1", [.integer(now)])
        }
    }
}
