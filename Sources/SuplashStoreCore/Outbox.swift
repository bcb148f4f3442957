import SuplashDomain
import SuplashSQL

/// The mail outbox (spec §3; docs/postgresql.md, "Background jobs"), shared by the delivery
/// workers of every instance: each claims its messages (`OutboxClaim`), so two instances never
/// attempt one message at the same time; the provider still deduplicates by message id (its
/// Idempotency-Key) when a worker dies between sending and recording.
extension OutboxRepository where Self: SQLStore {
    /// Claims up to `limit` due messages, oldest first, leased until `now + leaseMs`
    /// (`OutboxClaim.claim`); `markDelivered` / `markAttemptFailed` end the lease. Messages to an
    /// address whose mail is held (Apple's `email-disabled`, table `mail_holds`) are neither
    /// claimed nor counted by `nextAttemptTime`: they wait until the hold ends.
    public func claimDueMessages(now: Int64, limit: Int, leaseMs: Int64) throws -> [OutboxMessage] {
        try transaction { tx in
            try tx.enqueue(OutboxSQL.dropExpired, [.integer(now)])
            return try OutboxSQL.claim.claim(tx, now: now, limit: limit, leaseMs: leaseMs).map(OutboxSQL.message)
        }
    }

    public func dueMessages(now: Int64, limit: Int) throws -> [OutboxMessage] {
        try reading { c in try c.query(OutboxSQL.due, [.integer(now), .integer(Int64(limit))]).map(OutboxSQL.message) }
    }

    public func nextAttemptTime() throws -> Int64? {
        try reading { c in try c.queryOne(OutboxSQL.nextAttempt, [])?["t"].int64 }
    }

    public func markDelivered(id: String, now: Int64) throws {
        _ = try transaction { tx in try tx.execute(OutboxSQL.delivered, [.integer(now), .text(id)]) }
    }

    public func markAttemptFailed(
        id: String, attempts: Int, nextAttemptAt: Int64, abandon: Bool, errorKind: String, now: Int64
    ) throws {
        _ = try transaction { tx in
            try tx.execute(
                abandon ? OutboxSQL.abandon : OutboxSQL.retry,
                [.integer(Int64(attempts)), .integer(abandon ? now : nextAttemptAt), .text(errorKind), .text(id)])
        }
    }

    public func pendingCount() throws -> Int {
        try reading { c in Int(try c.queryOne(OutboxSQL.pending, [])?["n"].int64 ?? 0) }
    }

    public func dropExpiredMessages(now: Int64) throws -> Int {
        try transaction { tx in try tx.execute(OutboxSQL.dropExpired, [.integer(now)]) }
    }
}

/// The claim of an outbox table shared by the delivery workers of every instance (the mail
/// outbox; any later outbox with the same columns: `id`, `created_at`, `next_attempt_at`,
/// `delivered_at`, `failed_at`). One statement locks up to `limit` due rows, skipping rows
/// another worker has locked (`FOR UPDATE SKIP LOCKED` on PostgreSQL, docs "The Locking
/// Clause"; nothing on SQLite, whose single writer runs one claim at a time), and moves their
/// `next_attempt_at` to the lease end. Under READ COMMITTED a row that a concurrent claim
/// updated and committed is re-checked against the `WHERE` clause before it is locked, and is
/// no longer due — so concurrent claims get disjoint rows. A worker that dies before recording
/// its attempt leaves the row to be claimed again after the lease.
public struct OutboxClaim: Sendable {
    /// The statement: binds `?1` = now, `?2` = lease end (ms since the epoch), `?3` = limit;
    /// returns the claimed rows' `returning` columns, in no particular order.
    public let statement: SQLText

    /// The claim of `table` (an identifier constant) returning `returning` (column constants;
    /// include `id` and `created_at`, which `claim` orders by); `condition` (SQL text constant,
    /// `AND …`) narrows which due rows may be claimed.
    public init(table: String, returning: [String], condition: String = "") {
        statement = SQLText { d in
            """
            UPDATE \(table) SET next_attempt_at = ?2
            WHERE id IN (
                SELECT id FROM \(table)
                WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?1\(condition)
                ORDER BY next_attempt_at, created_at LIMIT ?3
                \(d.forUpdate(skipLocked: true)))
            RETURNING \(returning.joined(separator: ", "))
            """
        }
    }

    /// Claims up to `limit` rows due at `now` (ms since the epoch) until `now + leaseMs`, in
    /// `tx`; returns them oldest first (`created_at`, then `id`). One round trip.
    /// - Throws: the engine's error.
    public func claim<T: StoreTransaction>(_ tx: T, now: Int64, limit: Int, leaseMs: Int64) throws -> [T.Connection.Row] {
        try tx.query(statement, [.integer(now), .integer(now + max(0, leaseMs)), .integer(Int64(limit))]).sorted {
            ($0["created_at"].int64 ?? 0, $0["id"].text ?? "") < ($1["created_at"].int64 ?? 0, $1["id"].text ?? "")
        }
    }
}

/// The mail outbox's statements (`outbox`, migrations 0004 and 0013).
public enum OutboxSQL {
    /// Mail to a held relay address (`mail_holds`: its latest `email-disabled` is newer than its
    /// latest `email-enabled`) waits.
    static let notHeld = """
         AND NOT EXISTS (SELECT 1 FROM mail_holds WHERE mail_holds.address = outbox.recipient \
        AND (mail_holds.released_at IS NULL OR mail_holds.released_at < mail_holds.held_at))
        """
    static let claim = OutboxClaim(
        table: "outbox", returning: ["id", "recipient", "subject", "body", "created_at", "attempts"], condition: notHeld)
    static let insert = SQLText(
        """
        INSERT INTO outbox (id, recipient, subject, body, created_at, attempts, next_attempt_at, expires_at)
        VALUES (?1, ?2, ?3, ?4, ?5, 0, ?5, ?6)
        """)

    /// Queues `message` (due at once) in the caller's transaction: sent only if it commits;
    /// deleted unsent once `expiresAt` (the code's expiry, ms) passes.
    static func queue(_ tx: some StoreTransaction, _ m: OutboxMessage, expiresAt: Int64) throws {
        try tx.execute(
            insert,
            [.text(m.id), .text(m.recipient), .text(m.subject), .text(m.text), .integer(m.createdAt), .integer(expiresAt)])
    }

    /// Pending messages whose code expired at ?1 (index `outbox_expires`), held or not.
    public static let dropExpired = SQLText(
        "DELETE FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL AND expires_at <= ?1")

    static let due = SQLText(
        """
        SELECT id, recipient, subject, body, created_at, attempts FROM outbox
        WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?1
        ORDER BY next_attempt_at, created_at LIMIT ?2
        """)
    static let nextAttempt = SQLText(
        "SELECT min(next_attempt_at) AS t FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL\(notHeld)")
    static let delivered = SQLText("UPDATE outbox SET delivered_at = ?1, body = '' WHERE id = ?2 AND delivered_at IS NULL")
    static let abandon = SQLText(
        "UPDATE outbox SET attempts = ?1, failed_at = ?2, last_error = ?3, body = '' WHERE id = ?4 AND delivered_at IS NULL")
    static let retry = SQLText(
        "UPDATE outbox SET attempts = ?1, next_attempt_at = ?2, last_error = ?3 WHERE id = ?4 AND delivered_at IS NULL")
    static let pending = SQLText("SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL")

    static func message(_ row: some SQLRowValues) -> OutboxMessage {
        OutboxMessage(
            id: row["id"].text ?? "", recipient: row["recipient"].text ?? "", subject: row["subject"].text ?? "",
            text: row["body"].text ?? "", createdAt: row["created_at"].int64 ?? 0, attempts: Int(row["attempts"].int64 ?? 0))
    }
}
