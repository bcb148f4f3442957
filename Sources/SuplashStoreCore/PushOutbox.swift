import Foundation
import SuplashDomain
import SuplashSQL

/// The push outbox (spec §9; docs/push.md, "Push outbox"; table `push_outbox`, migration
/// 0010), shared by the senders of every instance: each claims its rows (`OutboxClaim`), so two
/// instances never send one row at the same time. Delivery is at least once: a sender that dies
/// between sending and recording leaves the row to be claimed again after the lease (the
/// collapse id makes the repeat replace the first).
extension PushOutboxRepository where Self: SQLStore {
    public func claimDuePushes(now: Int64, limit: Int, leaseMs: Int64, backgroundWindowMs: Int64, widgetsPerDay: Int) throws
        -> [ClaimedPush]
    {
        try transaction { tx in
            var rows = try PushSQL.claim.claim(tx, now: now, limit: limit, leaseMs: leaseMs)
            for row in rows where (row["expires_at"].int64 ?? now) <= now {
                try tx.enqueue(PushSQL.delete, [row["id"]])  // expired: never sent late
            }
            rows.removeAll { ($0["expires_at"].int64 ?? now) <= now }
            guard !rows.isEmpty else { return [] }
            var reads: [SQLStatement] = []
            for row in rows {
                let key: [SQLValue] = [row["user_id"], row["device_id"], row["push_type"]]
                reads.append(SQLStatement(PushSQL.target, key))
                let (since, count) = PushSQL.recentSendsRange(row["push_type"].text, now: now, widgetsPerDay: widgetsPerDay)
                reads.append(SQLStatement(PushSQL.recentSends, key + [.integer(since), .integer(count)]))
            }
            let found = try tx.pipeline(reads)
            var claimed: [ClaimedPush] = []
            for (i, row) in rows.enumerated() {
                let id = row["id"].text ?? ""
                guard let target = found[2 * i].first, let type = row["push_type"].text.flatMap(PushType.init(rawValue:)) else {
                    try tx.enqueue(PushSQL.delete, [.text(id)])  // the device holds no such token any more
                    continue
                }
                let sends = found[2 * i + 1].compactMap { $0["delivered_at"].int64 }
                let due =
                    switch type {
                    case .background: BackgroundRefreshRules.dueTime(now: now, recentSends: sends, windowMs: backgroundWindowMs)
                    case .widgets: ProgressPushRules.dueTime(now: now, recentSends: sends, perDay: widgetsPerDay)
                    case .complication:
                        ProgressPushRules.dueTime(now: now, recentSends: sends, perDay: ProgressPushRules.complicationsPerDay)
                    case .alert: now
                    }
                if due > now {
                    if due >= row["expires_at"].int64 ?? now {
                        try tx.enqueue(PushSQL.delete, [.text(id)])  // over the budget until it expires
                    } else {
                        try tx.enqueue(PushSQL.reschedule, [.integer(0), .integer(due), .null, .text(id)])
                    }
                    continue
                }
                try tx.enqueue(PushSQL.sending, [.text(id)])
                claimed.append(
                    ClaimedPush(
                        id: id, userID: row["user_id"].text ?? "", deviceID: row["device_id"].text ?? "", pushType: type,
                        payload: row["payload"].text ?? "", collapseID: row["collapse_id"].text,
                        expiresAt: row["expires_at"].int64 ?? now, attempts: Int(row["attempts"].int64 ?? 0),
                        sealedToken: target["sealed_token"].text ?? "", tokenIndex: target["token_index"].text ?? "",
                        tokenRegisteredAt: target["registered_at"].int64 ?? 0,
                        bundleID: target["bundle_id"].text ?? "",
                        environment: target["environment"].text.flatMap(PushEnvironment.init(rawValue:)) ?? .production))
            }
            return claimed
        }
    }

    public func recordPushOutcomes(_ outcomes: [PushOutcome], now: Int64) throws {
        guard !outcomes.isEmpty else { return }
        try transaction { tx in
            let sent: [(id: String, payload: String)] = outcomes.compactMap {
                if case .sent(let id, let payload) = $0 { (id, payload) } else { nil }
            }
            // The pending payloads in one round trip: a change after the claim replaced one,
            // keep the newer one pending as a new row, due now (the window moves it at the next claim).
            let current = sent.isEmpty ? [] : try tx.pipeline(sent.map { SQLStatement(PushSQL.pendingPayload, [.text($0.id)]) })
            for (push, rows) in zip(sent, current) {
                try tx.enqueue(PushSQL.sent, [.integer(now), .text(push.payload), .text(push.id)])
                if let newer = rows.first?["payload"].text, newer != push.payload {
                    try tx.enqueue(PushSQL.copyPending, [.text(PushSQL.newID()), .text(newer), .integer(now), .text(push.id)])
                }
            }
            for outcome in outcomes {
                switch outcome {
                case .sent: continue
                case .retry(let id, let attempts, let nextAttemptAt, let reason):
                    try tx.enqueue(
                        PushSQL.reschedule, [.integer(Int64(attempts)), .integer(nextAttemptAt), .text(reason), .text(id)])
                case .failed(let id, let reason, let tokenIndex):
                    if let tokenIndex { try tx.enqueue(PushSQL.dropToken, [.text(id), .text(tokenIndex)]) }
                    try tx.enqueue(PushSQL.failed, [.integer(now), .text(reason), .text(id)])
                }
            }
        }
    }

    public func purgePushes(before: Int64) throws -> Int {
        var total = 0
        while true {
            let n = try transaction { tx in try tx.execute(PushSQL.purge, [.integer(before), .integer(Int64(PushSQL.purgeBatch))]) }
            total += n
            if n < PushSQL.purgeBatch { return total }
        }
    }

    public func observeQueuedPushes(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        PushDoorbell.shared.observe(body)
    }

    public func pushQueueFigures(now: Int64) throws -> PushQueueFigures {
        try reading { c in
            let row = try c.queryOne(PushSQL.figures, [.integer(now)])
            return PushQueueFigures(pending: Int(row?["n"].int64 ?? 0), oldestDueAt: row?["oldest"].int64)
        }
    }
}

/// The observers of `observeQueuedPushes` in this process (every store object shares it: a
/// spurious ring only makes a sender claim early).
final class PushDoorbell: @unchecked Sendable {
    static let shared = PushDoorbell()
    private let lock = NSLock()
    // Guarded by `lock`.
    private var observers: [UInt64: @Sendable () -> Void] = [:]
    private var next: UInt64 = 0

    func observe(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let id = lock.withLock {
            next += 1
            observers[next] = body
            return next
        }
        return { [self] in lock.withLock { _ = observers.removeValue(forKey: id) } }
    }

    func ring() {
        for body in lock.withLock({ Array(observers.values) }) { body() }
    }
}

/// Statements other use cases run inside their own transactions.
public enum PushOutboxStatements {
    /// Runs an outbox insert of this file and arranges the senders' wake-up when it queued a
    /// row: on PostgreSQL queued (no round trip), the statement itself notifying
    /// `PushSQL.wakeChannel` (sent with the commit); on SQLite run now, ringing this process's
    /// `PushDoorbell` after the commit when it changed a row.
    /// - Throws: the engine's error (SQLite).
    static func queue(_ tx: some StoreTransaction, _ sql: SQLText, _ args: [SQLValue]) throws {
        switch tx.dialect {
        case .postgres: try tx.enqueue(sql, args)
        case .sqlite: if try tx.execute(sql, args) > 0 { tx.afterCommit { PushDoorbell.shared.ring() } }
        }
    }

    /// Background refresh (docs/push.md, "Background refresh"): queues, with `tx`'s commit, a
    /// `background` push for each of `userID`'s devices holding a background token, except
    /// `tx.writerDeviceID`. Coalesced per device: when the device already has a pending
    /// background row (the partial unique index `push_outbox_pending`), nothing is written —
    /// that row is sent after this commit anyway — unless it is in flight (state `sending`),
    /// when its payload becomes this change's, so that recording the send keeps the newer
    /// payload pending. One queued statement (no round trip on PostgreSQL). The stores call it where a transaction first takes a change position for a
    /// user.
    /// - Throws: the engine's error (SQLite).
    public static func backgroundRefresh(_ tx: some StoreTransaction, userID: String) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try queue(
            tx, PushSQL.backgroundRefresh,
            [
                .text(userID), .text(tx.writerDeviceID ?? ""), .text(BackgroundRefreshRules.payload(changedAt: now)),
                .integer(now), .integer(now + BackgroundRefreshRules.lifetimeMs), .text(BackgroundRefreshRules.collapseID),
            ])
    }
}

extension PushOutboxStatements {
    /// Widget and complication pushes (docs/push.md, "Widgets and complications"): when the
    /// change moved today's total of `userID` (`date` is the user's local today, by `today`) by
    /// at least 5 % of the day's goal or reached the goal (`ProgressPushRules.moved`), queues a
    /// `{"aps":{"content-changed":true}}` push for each of the user's devices holding a
    /// `widgets` or `complication` token, except `tx.writerDeviceID`; a device with one pending
    /// already gets nothing more. The 24-hour budgets are the sender's, at claim time
    /// (`claimDuePushes`). One queued statement, only when the rule holds.
    /// - Throws: the engine's error (SQLite).
    public static func progressChanged(
        _ tx: some StoreTransaction, userID: String, date: LocalDate, today: LocalDate, beforeMl: Int, afterMl: Int,
        goalMl: Int
    ) throws {
        guard date == today, ProgressPushRules.moved(beforeMl: beforeMl, afterMl: afterMl, goalMl: goalMl) else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try queue(
            tx, PushSQL.progressRefresh,
            [
                .text(userID), .text(tx.writerDeviceID ?? ""), .text(ProgressPushRules.payload), .integer(now),
                .integer(now + ProgressPushRules.lifetimeMs),
            ])
    }
}

/// The outbox's statements (`push_outbox`, migration 0010). Pending = neither `delivered_at`
/// nor `failed_at` (the predicate of the partial indexes).
public enum PushSQL {
    static let pending = "delivered_at IS NULL AND failed_at IS NULL"
    /// A row id: 32 random lower-case hex digits per row, made by the database (one statement
    /// inserts a row per device).
    static func idExpression(_ d: SQLDialect) -> String {
        d == .sqlite ? "lower(hex(randomblob(16)))" : "replace(gen_random_uuid()::text, '-', '')"
    }

    /// The `LISTEN/NOTIFY` channel of queued pushes: the outbox inserts notify it (payload: the
    /// user id) when they queued a row, delivered with the commit; every instance's sender
    /// listens and claims at once.
    public static let wakeChannel = "suplash_pushes"

    /// `insert` (an `INSERT` into `push_outbox`) as written on SQLite; on PostgreSQL wrapped so
    /// that it notifies `wakeChannel` when it inserted or updated a row.
    static func notifying(_ d: SQLDialect, _ insert: String) -> String {
        d == .sqlite
            ? insert
            : "WITH queued AS (\(insert) RETURNING user_id) SELECT pg_notify('\(wakeChannel)', user_id) FROM queued LIMIT 1"
    }

    /// A row id made here (32 lower-case hex digits).
    static func newID() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// `PushOutboxStatements.backgroundRefresh`: binds ?1 user, ?2 writer device ('' = none),
    /// ?3 payload, ?4 now, ?5 expiry, ?6 collapse id. A device whose row waits (state
    /// `pending`) is filtered out before the insert: reaching `ON CONFLICT … DO UPDATE` would
    /// lock that row even when its `WHERE` is false, and on PostgreSQL a row lock is a WAL
    /// record and a dirtied page per device on every write. Only an in-flight row (`sending`)
    /// reaches the conflict clause.
    public static let backgroundRefresh = SQLText { d in
        notifying(
            d,
            """
            INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
                attempts, next_attempt_at, state, created_at)
            SELECT \(idExpression(d)), t.user_id, t.device_id, 'background', ?3, ?6, ?4, ?5, 0, ?4, 'pending', ?4
            FROM device_tokens t WHERE t.user_id = ?1 AND t.push_type = 'background' AND t.device_id <> ?2
            AND NOT EXISTS (
                SELECT 1 FROM push_outbox o WHERE o.user_id = t.user_id AND o.device_id = t.device_id
                AND o.push_type = 'background' AND o.delivered_at IS NULL AND o.failed_at IS NULL AND o.state = 'pending')
            ON CONFLICT (user_id, device_id, push_type) WHERE \(pending)
            DO UPDATE SET payload = excluded.payload, expires_at = excluded.expires_at WHERE push_outbox.state = 'sending'
            """
        )
    }
    /// `PushOutboxStatements.progressChanged`: binds ?1 user, ?2 writer device ('' = none),
    /// ?3 payload, ?4 now, ?5 expiry.
    public static let progressRefresh = SQLText { d in
        notifying(
            d,
            """
            INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
                attempts, next_attempt_at, state, created_at)
            SELECT \(idExpression(d)), t.user_id, t.device_id, t.push_type, ?3, NULL, ?4, ?5, 0, ?4, 'pending', ?4
            FROM device_tokens t
            WHERE t.user_id = ?1 AND t.push_type IN ('widgets', 'complication') AND t.device_id <> ?2
            ON CONFLICT (user_id, device_id, push_type) WHERE \(pending) DO NOTHING
            """
        )
    }
    /// The claim (`OutboxClaim`).
    public static let claim = OutboxClaim(
        table: "push_outbox",
        returning: ["id", "user_id", "device_id", "push_type", "payload", "collapse_id", "expires_at", "attempts", "created_at"])
    /// The device's sealed token for the push type, with what the request needs (a row still
    /// holding plaintext, before start-up sealed it, is no token).
    static let target = SQLText(
        """
        SELECT t.sealed_token, t.token_index, t.registered_at, d.bundle_id, d.environment FROM device_tokens t
        JOIN devices d ON d.user_id = t.user_id AND d.id = t.device_id
        WHERE t.user_id = ?1 AND t.device_id = ?2 AND t.push_type = ?3 AND t.token_index IS NOT NULL
        """)
    /// The device's latest ?5 sends of the push type since ?4 (index `push_outbox_sent`).
    static let recentSends = SQLText(
        """
        SELECT delivered_at FROM push_outbox
        WHERE user_id = ?1 AND device_id = ?2 AND push_type = ?3 AND delivered_at > ?4
        ORDER BY delivered_at DESC LIMIT ?5
        """)
    /// What `recentSends` reads for a row of `pushType`: since when, and how many at most
    /// (what its coalescing rule or budget looks at).
    static func recentSendsRange(_ pushType: String?, now: Int64, widgetsPerDay: Int) -> (since: Int64, count: Int64) {
        switch pushType.flatMap(PushType.init(rawValue:)) {
        case .background: (now - BackgroundRefreshRules.hourMs, Int64(BackgroundRefreshRules.maxPerHour))
        case .widgets: (now - ProgressPushRules.dayMs, Int64(max(0, widgetsPerDay)))
        case .complication: (now - ProgressPushRules.dayMs, Int64(ProgressPushRules.complicationsPerDay))
        case .alert, nil: (now, 0)
        }
    }
    static let delete = SQLText("DELETE FROM push_outbox WHERE id = ?1")
    /// A claimed row handed to APNs: later changes update its payload (`backgroundRefresh`).
    static let sending = SQLText("UPDATE push_outbox SET state = 'sending' WHERE id = ?1")
    static let reschedule = SQLText(
        """
        UPDATE push_outbox SET attempts = attempts + ?1, next_attempt_at = ?2, reason = coalesce(?3, reason), state = 'pending'
        WHERE id = ?4 AND \(pending)
        """)
    static let pendingPayload = SQLText { d in "SELECT payload FROM push_outbox WHERE id = ?1 AND \(pending) \(d.forUpdate())" }
    static let sent = SQLText(
        """
        UPDATE push_outbox SET delivered_at = ?1, state = 'sent', payload = ?2, attempts = attempts + 1, reason = NULL
        WHERE id = ?3 AND \(pending)
        """)
    static let copyPending = SQLText(
        """
        INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
            attempts, next_attempt_at, state, created_at)
        SELECT ?1, user_id, device_id, push_type, ?2, collapse_id, ?3, expires_at, 0, ?3, 'pending', ?3
        FROM push_outbox WHERE id = ?4
        """)
    static let failed = SQLText(
        """
        UPDATE push_outbox SET failed_at = ?1, state = 'failed', reason = ?2, attempts = attempts + 1
        WHERE id = ?3 AND \(pending)
        """)
    /// The device's token rows that still hold the token push ?1 was sent to (blind index ?2).
    static let dropToken = SQLText(
        """
        DELETE FROM device_tokens WHERE token_index = ?2
        AND (user_id, device_id) IN (SELECT user_id, device_id FROM push_outbox WHERE id = ?1)
        """)
    /// Up to ?2 ended rows created before ?1, oldest first, through `push_outbox_done` (whose
    /// predicate the statement repeats, so SQLite can use that partial index).
    public static let purge = SQLText(
        """
        DELETE FROM push_outbox WHERE id IN (
            SELECT id FROM push_outbox WHERE (delivered_at IS NOT NULL OR failed_at IS NOT NULL) AND created_at < ?1
            ORDER BY created_at LIMIT ?2)
        """)
    /// Rows one purge transaction deletes at most (SQLite's one writer is held for one batch).
    static let purgeBatch = 1000
    static let figures = SQLText(
        """
        SELECT count(*) AS n, min(CASE WHEN next_attempt_at <= ?1 THEN due_at END) AS oldest
        FROM push_outbox WHERE \(pending)
        """)
}
