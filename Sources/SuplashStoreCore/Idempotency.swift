import SuplashDomain
import SuplashJSON
import SuplashSQL

/// Idempotency-Key requests (spec §7). Completed responses are rows of
/// `idempotency_records`; so is a running claim (status 0, an empty body, `expires_at` = the
/// lease end), so the primary key (caller, key) decides between two claimers — on PostgreSQL
/// across instances: a retry that lands on another instance replays the same first response,
/// and a duplicate that lands there while the first still runs is `.running` (409). On SQLite
/// the server keeps running keys in memory instead (`IdempotencyGuard`, one process), but the
/// claim behaves the same.
extension IdempotencyRepository where Self: AutocommitStore {
    public func idempotencyRecord(caller: String, key: String, now: Int64) throws -> IdempotencyRecord? {
        try reading { c in
            try c.queryOne(IdempotencySQL.record, [.text(caller), .text(key), .integer(now)]).map(IdempotencySQL.decode)
        }
    }

    public func saveIdempotencyRecord(caller: String, key: String, record: IdempotencyRecord, now: Int64) throws {
        _ = try transaction { tx in
            try tx.execute(IdempotencySQL.save, IdempotencySQL.values(caller, key, record, createdAt: now))
        }
    }

    public func purgeIdempotencyRecords(now: Int64) throws -> Int {
        try transaction { tx in try tx.execute(IdempotencySQL.purge, [.integer(now)]) }
    }

    /// The claim is `INSERT … ON CONFLICT (caller, idempotency_key) DO UPDATE … WHERE
    /// expires_at <= now RETURNING`, then, when it took nothing, a read of the row holding the key.
    /// Two PostgreSQL instances cannot both proceed (each statement in autocommit at READ
    /// COMMITTED): a second `INSERT` waits for an uncommitted conflicting one, then locks the
    /// committed row and evaluates the `WHERE` on that latest version — exactly one of insert
    /// or update, even at READ COMMITTED — so only an expired row (an old record, a crashed
    /// instance's claim) is taken over, and two takeovers serialise on the row lock. The loser
    /// reads the row in a new statement (it sees the winner's commit); if the row vanished
    /// meanwhile (abandoned, purged) the claim is tried again. On SQLite both statements run in
    /// one job of the single writer.
    public func claimIdempotencyKey(
        caller: String, key: String, fingerprint: [UInt8], now: Int64, leaseUntil: Int64
    ) throws -> IdempotencyClaim {
        for _ in 0..<4 {
            let outcome: IdempotencyClaim? = try autocommit { c in
                let claim: [SQLValue] = [
                    .text(caller), .text(key), .blob(fingerprint), .blob([]), .integer(now), .integer(leaseUntil),
                ]
                if try c.queryOne(IdempotencySQL.claim, claim) != nil { return .claimed(token: now) }
                guard let row = try c.queryOne(IdempotencySQL.live, [.text(caller), .text(key), .integer(now)]) else {
                    return nil
                }
                return (row["status"].int64 ?? 0) == 0 ? .running : .completed(IdempotencySQL.decode(row))
            }
            if let outcome { return outcome }
        }
        // The row keeps appearing and vanishing: another request is busy with this key.
        return .running
    }

    public func completeIdempotencyKey(caller: String, key: String, token: Int64, record: IdempotencyRecord) throws {
        let values = IdempotencySQL.values(caller, key, record, createdAt: token)
        _ = try autocommit { c in try c.execute(IdempotencySQL.complete, values) }
    }

    public func abandonIdempotencyKey(caller: String, key: String, token: Int64) throws {
        _ = try autocommit { c in try c.execute(IdempotencySQL.abandon, [.text(caller), .text(key), .integer(token)]) }
    }
}

/// Where each engine runs writes that need no transaction of their own (the Idempotency-Key
/// claim, its completion and abandonment) — what truly differs: on PostgreSQL a pooled
/// connection in autocommit, each statement durable before the next, no row lock held past
/// its statement and no `BEGIN`/`COMMIT` round trip; on SQLite one job of the single writer
/// (the statements run together, durable before it returns).
public protocol AutocommitStore: SQLStore {
    /// The connection the statements run on.
    associatedtype AutocommitConnection: SQLExecutor
    /// Runs `body`'s statements as described above and returns its result.
    /// - Throws: `RepositoryError` (storage failures mapped by the store), or what `body` throws.
    func autocommit<T: Sendable>(_ body: @escaping @Sendable (AutocommitConnection) throws -> T) throws -> T
}

enum IdempotencySQL {
    static let columns = "fingerprint, status, headers, body, expires_at"
    static let record = SQLText(
        """
        SELECT \(columns) FROM idempotency_records
        WHERE caller = ?1 AND idempotency_key = ?2 AND expires_at > ?3 AND status > 0
        """)
    static let live = SQLText(
        "SELECT \(columns) FROM idempotency_records WHERE caller = ?1 AND idempotency_key = ?2 AND expires_at > ?3")
    static let save = SQLText(
        """
        INSERT INTO idempotency_records
            (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        ON CONFLICT (caller, idempotency_key) DO UPDATE SET
            fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
            body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
        """)
    static let purge = SQLText("DELETE FROM idempotency_records WHERE expires_at <= ?1")
    static let claim = SQLText(
        """
        INSERT INTO idempotency_records AS r
            (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
        VALUES (?1, ?2, ?3, 0, '[]', ?4, ?5, ?6)
        ON CONFLICT (caller, idempotency_key) DO UPDATE SET
            fingerprint = excluded.fingerprint, status = 0, headers = '[]', body = excluded.body,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        WHERE r.expires_at <= excluded.created_at
        RETURNING created_at
        """)
    static let complete = SQLText(
        """
        INSERT INTO idempotency_records AS r
            (caller, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        ON CONFLICT (caller, idempotency_key) DO UPDATE SET
            fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
            body = excluded.body, expires_at = excluded.expires_at
        WHERE r.status = 0 AND r.created_at = excluded.created_at
        """)
    static let abandon = SQLText(
        "DELETE FROM idempotency_records WHERE caller = ?1 AND idempotency_key = ?2 AND status = 0 AND created_at = ?3")

    /// The arguments of `save` and `complete`; the replayed headers are stored as a JSON array
    /// of `[name, value]` pairs.
    static func values(_ caller: String, _ key: String, _ record: IdempotencyRecord, createdAt: Int64) -> [SQLValue] {
        let headers = JSONValue.array(record.headers.map { .array($0.map(JSONValue.string)) }).serializedString()
        return [
            .text(caller), .text(key), .blob(record.fingerprint), .integer(Int64(record.status)), .text(headers),
            .blob(record.body), .integer(createdAt), .integer(record.expiresAt),
        ]
    }

    static func decode(_ row: some SQLRowValues) -> IdempotencyRecord {
        var headers: [[String]] = []
        if let text = row["headers"].text, case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) {
            for case .array(let pair) in items where pair.count == 2 {
                if let name = pair[0].stringValue, let value = pair[1].stringValue { headers.append([name, value]) }
            }
        }
        return IdempotencyRecord(
            fingerprint: row["fingerprint"].bytes ?? [], status: Int(row["status"].int64 ?? 500), headers: headers,
            body: row["body"].bytes ?? [], expiresAt: row["expires_at"].int64 ?? 0)
    }
}
