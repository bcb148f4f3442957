import Foundation
import SuplashDomain
import SuplashSQL

/// The push outbox (spec §9; docs/push.md, "Push outbox"; table `push_outbox`, migration
/// 0010), shared by the senders of every instance: each claims its rows (`OutboxClaim`), so two
/// instances never send one row at the same time. Delivery is at least once: a sender that dies
/// between sending and recording leaves the row to be claimed again after the lease (the
/// collapse id makes the repeat replace the first).
extension PushOutboxRepository where Self: SQLStore {
    public func claimDuePushes(now: Int64, limit: Int, leaseMs: Int64, backgroundWindowMs: Int64) throws -> [ClaimedPush] {
        try transaction { tx in
            try tx.enqueue(PushSQL.dropExpired, [.integer(now)])
            let rows = try PushSQL.claim.claim(tx, now: now, limit: limit, leaseMs: leaseMs)
            guard !rows.isEmpty else { return [] }
            var reads: [SQLStatement] = []
            for row in rows {
                let key: [SQLValue] = [row["user_id"], row["device_id"], row["push_type"]]
                reads.append(SQLStatement(PushSQL.target, key))
                reads.append(SQLStatement(PushSQL.recentSends, key + [.integer(now - BackgroundRefreshRules.hourMs)]))
            }
            let found = try tx.pipeline(reads)
            var claimed: [ClaimedPush] = []
            for (i, row) in rows.enumerated() {
                let id = row["id"].text ?? ""
                guard let target = found[2 * i].first, let type = row["push_type"].text.flatMap(PushType.init(rawValue:)) else {
                    try tx.enqueue(PushSQL.delete, [.text(id)])  // the device holds no such token any more
                    continue
                }
                if type == .background {
                    let sends = found[2 * i + 1].compactMap { $0["delivered_at"].int64 }
                    let due = BackgroundRefreshRules.dueTime(now: now, recentSends: sends, windowMs: backgroundWindowMs)
                    if due > now {
                        try tx.enqueue(PushSQL.reschedule, [.integer(0), .integer(due), .null, .text(id)])
                        continue
                    }
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

    public func recordPushSent(id: String, payload: String, now: Int64) throws {
        try transaction { tx in
            // A change after the claim replaced the payload: keep the newer one pending as a
            // new row, due now (the coalescing window moves it at the next claim).
            if let current = try tx.queryOne(PushSQL.pendingPayload, [.text(id)])?["payload"].text, current != payload {
                try tx.enqueue(PushSQL.sent, [.integer(now), .text(payload), .text(id)])
                try tx.enqueue(PushSQL.copyPending, [.text(PushSQL.newID()), .text(current), .integer(now), .text(id)])
            } else {
                try tx.enqueue(PushSQL.sent, [.integer(now), .text(payload), .text(id)])
            }
        }
    }

    public func recordPushRetry(id: String, attempts: Int, nextAttemptAt: Int64, reason: String) throws {
        _ = try transaction { tx in
            try tx.execute(PushSQL.reschedule, [.integer(Int64(attempts)), .integer(nextAttemptAt), .text(reason), .text(id)])
        }
    }

    public func recordPushFailed(id: String, reason: String, now: Int64, dropTokenIndex: String?) throws {
        _ = try transaction { tx in
            if let index = dropTokenIndex { try tx.enqueue(PushSQL.dropToken, [.text(id), .text(index)]) }
            try tx.execute(PushSQL.failed, [.integer(now), .text(reason), .text(id)])
        }
    }

    public func purgePushes(before: Int64) throws -> Int {
        try transaction { tx in try tx.execute(PushSQL.purge, [.integer(before)]) }
    }

    public func pushQueueFigures(now: Int64) throws -> PushQueueFigures {
        try reading { c in
            let row = try c.queryOne(PushSQL.figures, [.integer(now)])
            return PushQueueFigures(pending: Int(row?["n"].int64 ?? 0), oldestDueAt: row?["oldest"].int64)
        }
    }
}

/// Statements other use cases run inside their own transactions.
public enum PushOutboxStatements {
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
        try tx.enqueue(
            PushSQL.backgroundRefresh,
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
    /// `widgets` or `complication` token, except `tx.writerDeviceID`, within each device's
    /// budget of the last 24 hours; a device with one pending already gets nothing more. One
    /// queued statement, only when the rule holds.
    /// - Throws: the engine's error (SQLite).
    public static func progressChanged(
        _ tx: some StoreTransaction, userID: String, date: LocalDate, today: LocalDate, beforeMl: Int, afterMl: Int,
        goalMl: Int
    ) throws {
        guard date == today, ProgressPushRules.moved(beforeMl: beforeMl, afterMl: afterMl, goalMl: goalMl) else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try tx.enqueue(
            PushSQL.progressRefresh,
            [
                .text(userID), .text(tx.writerDeviceID ?? ""), .text(ProgressPushRules.payload), .integer(now),
                .integer(now + ProgressPushRules.lifetimeMs), .integer(Int64(ProgressPushRules.widgetsPerDay)),
                .integer(Int64(ProgressPushRules.complicationsPerDay)), .integer(now - ProgressPushRules.dayMs),
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

    /// A row id made here (32 lower-case hex digits).
    static func newID() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// `PushOutboxStatements.backgroundRefresh`: binds ?1 user, ?2 writer device ('' = none),
    /// ?3 payload, ?4 now, ?5 expiry, ?6 collapse id.
    public static let backgroundRefresh = SQLText { d in
        """
        INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
            attempts, next_attempt_at, state, created_at)
        SELECT \(idExpression(d)), user_id, device_id, 'background', ?3, ?6, ?4, ?5, 0, ?4, 'pending', ?4
        FROM device_tokens WHERE user_id = ?1 AND push_type = 'background' AND device_id <> ?2
        ON CONFLICT (user_id, device_id, push_type) WHERE \(pending)
        DO UPDATE SET payload = excluded.payload, expires_at = excluded.expires_at WHERE push_outbox.state = 'sending'
        """
    }
    /// `PushOutboxStatements.progressChanged`: binds ?1 user, ?2 writer device ('' = none),
    /// ?3 payload, ?4 now, ?5 expiry, ?6 widget budget, ?7 complication budget, ?8 budget start.
    public static let progressRefresh = SQLText { d in
        """
        INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at,
            attempts, next_attempt_at, state, created_at)
        SELECT \(idExpression(d)), t.user_id, t.device_id, t.push_type, ?3, NULL, ?4, ?5, 0, ?4, 'pending', ?4
        FROM device_tokens t
        WHERE t.user_id = ?1 AND t.push_type IN ('widgets', 'complication') AND t.device_id <> ?2
        AND (SELECT count(*) FROM push_outbox o
            WHERE o.user_id = t.user_id AND o.device_id = t.device_id AND o.push_type = t.push_type AND o.created_at > ?8)
            < CASE t.push_type WHEN 'widgets' THEN CAST(?6 AS BIGINT) ELSE CAST(?7 AS BIGINT) END
        ON CONFLICT (user_id, device_id, push_type) WHERE \(pending) DO NOTHING
        """
    }
    /// The claim (`OutboxClaim`).
    public static let claim = OutboxClaim(
        table: "push_outbox",
        returning: ["id", "user_id", "device_id", "push_type", "payload", "collapse_id", "expires_at", "attempts", "created_at"])
    static let dropExpired = SQLText("DELETE FROM push_outbox WHERE \(pending) AND expires_at <= ?1")
    /// The device's sealed token for the push type, with what the request needs (a row still
    /// holding plaintext, before start-up sealed it, is no token).
    static let target = SQLText(
        """
        SELECT t.sealed_token, t.token_index, t.registered_at, d.bundle_id, d.environment FROM device_tokens t
        JOIN devices d ON d.user_id = t.user_id AND d.id = t.device_id
        WHERE t.user_id = ?1 AND t.device_id = ?2 AND t.push_type = ?3 AND t.token_index IS NOT NULL
        """)
    /// The device's sends of the push type since ?4 (index `push_outbox_sent`).
    static let recentSends = SQLText(
        """
        SELECT delivered_at FROM push_outbox
        WHERE user_id = ?1 AND device_id = ?2 AND push_type = ?3 AND delivered_at > ?4
        ORDER BY delivered_at DESC LIMIT \(BackgroundRefreshRules.maxPerHour)
        """)
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
    static let purge = SQLText("DELETE FROM push_outbox WHERE delivered_at < ?1 OR failed_at < ?1")
    static let figures = SQLText(
        """
        SELECT count(*) AS n, min(CASE WHEN next_attempt_at <= ?1 THEN due_at END) AS oldest
        FROM push_outbox WHERE \(pending)
        """)
}
