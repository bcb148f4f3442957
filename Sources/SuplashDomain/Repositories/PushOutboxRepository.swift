/// A push the sender claimed (`PushOutboxRepository.claimDuePushes`): the outbox row with the
/// device's current token for its push type, read in the claim's transaction.
public struct ClaimedPush: Sendable, Equatable {
    /// The row's id: 32 lower-case hex digits (sent as the `apns-id` UUID).
    public var id: String
    /// The account.
    public var userID: String
    /// The device (its `X-Device-ID`).
    public var deviceID: String
    /// The push type (`apns-push-type`).
    public var pushType: PushType
    /// The APNs JSON payload, as stored.
    public var payload: String
    /// `apns-collapse-id`, when set.
    public var collapseID: String?
    /// When the push stops being worth sending (ms since the epoch; `apns-expiration`).
    public var expiresAt: Int64
    /// Attempts recorded so far.
    public var attempts: Int
    /// The device's token for `pushType`, sealed (`SealedPushToken.envelope`): the sender
    /// opens it just before sending.
    public var sealedToken: String
    /// The token's blind index (`SealedPushToken.blindIndex`): what a `.failed` outcome drops.
    public var tokenIndex: String
    /// When that token was registered (ms): `Unregistered` answers older than it keep it.
    public var tokenRegisteredAt: Int64
    /// The device's bundle id (the APNs topic's base).
    public var bundleID: String
    /// The device's APNs environment.
    public var environment: PushEnvironment

    /// A claimed push with every field given.
    public init(
        id: String, userID: String, deviceID: String, pushType: PushType, payload: String, collapseID: String?,
        expiresAt: Int64, attempts: Int, sealedToken: String, tokenIndex: String, tokenRegisteredAt: Int64, bundleID: String,
        environment: PushEnvironment
    ) {
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.pushType = pushType
        self.payload = payload
        self.collapseID = collapseID
        self.expiresAt = expiresAt
        self.attempts = attempts
        self.sealedToken = sealedToken
        self.tokenIndex = tokenIndex
        self.tokenRegisteredAt = tokenRegisteredAt
        self.bundleID = bundleID
        self.environment = environment
    }
}

/// What became of one claimed push (`PushOutboxRepository.recordPushOutcomes`).
public enum PushOutcome: Sendable, Equatable {
    /// APNs accepted push `id`, claimed with `payload`.
    case sent(id: String, payload: String)
    /// Push `id` is tried again at `nextAttemptAt` (ms) after `attempts` more attempts (`0`
    /// for a paused sender); `reason` is an APNs reason code or ours.
    case retry(id: String, attempts: Int, nextAttemptAt: Int64, reason: String)
    /// Push `id` is given up with `reason`; with `dropTokenIndex` (the claimed push's
    /// `tokenIndex`), the token rows whose blind index it is are deleted (every push type:
    /// alert and background share the token).
    case failed(id: String, reason: String, dropTokenIndex: String?)
}

/// The push queue's figures for `/metrics` (`PushOutboxRepository.pushQueueFigures`).
public struct PushQueueFigures: Sendable, Equatable {
    /// Rows waiting to be sent (pending, due or not, leased included).
    public var pending: Int
    /// The first due time among rows due now (ms since the epoch), nil when none is due.
    public var oldestDueAt: Int64?

    /// - Parameters:
    ///   - pending: see `pending`.
    ///   - oldestDueAt: see `oldestDueAt`.
    public init(pending: Int, oldestDueAt: Int64?) {
        self.pending = pending
        self.oldestDueAt = oldestDueAt
    }
}

/// The push outbox of push delivery (spec §9; docs/push.md, "Push outbox"): rows are written by
/// the store transactions that cause them (background refresh: `StoreTransaction`'s first
/// change position for a user); the sender of every instance claims, sends and records them.
/// Times are ms since the Unix epoch.
public protocol PushOutboxRepository: Sendable {
    /// In one transaction: claims up to `limit` due rows until `now + leaseMs` (`FOR UPDATE SKIP
    /// LOCKED` on PostgreSQL, so two instances never claim one row); deletes claimed rows expired
    /// at `now` and those whose device no longer holds a token of their push type; moves claimed background rows that `BackgroundRefreshRules.dueTime` says are not
    /// due yet (the device's recent sends within `backgroundWindowMs`, the hourly cap) and
    /// widget / complication rows over the device's 24-hour budget (`widgetsPerDay`,
    /// `ProgressPushRules.complicationsPerDay`; `ProgressPushRules.dueTime`) to their due time,
    /// or deletes them when that is past their expiry; returns the rest, oldest first.
    /// - Throws: `RepositoryError` (storage).
    func claimDuePushes(now: Int64, limit: Int, leaseMs: Int64, backgroundWindowMs: Int64, widgetsPerDay: Int) throws
        -> [ClaimedPush]
    /// Records the outcomes of a sent batch in one transaction (one durable commit on SQLite;
    /// on PostgreSQL the pending payloads are read in one round trip and the rest travels with
    /// the commit), at `now`: `.sent` rows become sent — when a later change replaced the
    /// pending row's payload meanwhile, the sent push is recorded with the payload it carried and
    /// the newer payload stays pending as a new row (the coalescing window then decides its
    /// time); `.retry` rows are rescheduled; `.failed` rows are given up (and their token
    /// dropped when asked).
    /// - Throws: `RepositoryError` (storage).
    func recordPushOutcomes(_ outcomes: [PushOutcome], now: Int64) throws
    /// Deletes sent and failed rows created before `before` (a row ends within its lifetime of
    /// being queued: hours, against a retention of days), a batch per transaction; returns how many.
    /// - Throws: `RepositoryError` (storage).
    func purgePushes(before: Int64) throws -> Int
    /// The queue's depth and the first due time of rows due at `now`.
    /// - Throws: `RepositoryError` (storage).
    func pushQueueFigures(now: Int64) throws -> PushQueueFigures
    /// Calls `body` after each commit in this process that queued pushes, so that a sender
    /// claims them at once instead of at its next poll (SQLite; on PostgreSQL such a commit
    /// sends `NOTIFY suplash_pushes`, heard by every instance). `body` must be quick (it runs
    /// on the committing thread). Returns what stops the calls.
    func observeQueuedPushes(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void
}

extension PushOutboxRepository {
    /// `recordPushOutcomes` of one `.sent`.
    /// - Throws: `RepositoryError` (storage).
    public func recordPushSent(id: String, payload: String, now: Int64) throws {
        try recordPushOutcomes([.sent(id: id, payload: payload)], now: now)
    }

    /// `recordPushOutcomes` of one `.retry`.
    /// - Throws: `RepositoryError` (storage).
    public func recordPushRetry(id: String, attempts: Int, nextAttemptAt: Int64, reason: String) throws {
        try recordPushOutcomes(
            [.retry(id: id, attempts: attempts, nextAttemptAt: nextAttemptAt, reason: reason)], now: nextAttemptAt)
    }

    /// `recordPushOutcomes` of one `.failed` at `now`.
    /// - Throws: `RepositoryError` (storage).
    public func recordPushFailed(id: String, reason: String, now: Int64, dropTokenIndex: String?) throws {
        try recordPushOutcomes([.failed(id: id, reason: reason, dropTokenIndex: dropTokenIndex)], now: now)
    }

    /// `claimDuePushes` with the default widget budget (`ProgressPushRules.widgetsPerDay`).
    /// - Throws: `RepositoryError` (storage).
    public func claimDuePushes(now: Int64, limit: Int, leaseMs: Int64, backgroundWindowMs: Int64) throws -> [ClaimedPush] {
        try claimDuePushes(
            now: now, limit: limit, leaseMs: leaseMs, backgroundWindowMs: backgroundWindowMs,
            widgetsPerDay: ProgressPushRules.widgetsPerDay)
    }
}

/// Background refresh (spec §9; docs/push.md, "Background refresh"): when a user's data takes a
/// new change position, each of the user's other devices with a background token gets a
/// `background` push, coalesced per device. Pure rules.
public enum BackgroundRefreshRules {
    /// Background pushes per device within any hour (Apple's guidance: two or three an hour).
    public static let maxPerHour = 3
    /// One hour, ms.
    public static let hourMs: Int64 = 3_600_000
    /// How long a background push stays worth sending, ms (2 hours: longer than the hourly
    /// cap can hold a coalesced row back, and a device unreachable longer syncs when it next
    /// opens anyway).
    public static let lifetimeMs: Int64 = 7_200_000
    /// The collapse id of background refresh pushes.
    public static let collapseID = "suplash-sync"

    /// The payload: `content-available` and the time of the newest change it announces, no
    /// user content (positions on PostgreSQL are final only at the commit; the app pulls the
    /// sync feed with its own token).
    public static func payload(changedAt: Int64) -> String {
        "{\"aps\":{\"content-available\":1},\"suplash\":{\"changedAt\":\(changedAt)}}"
    }

    /// When a pending background push for a device may be sent: at once (`now`, the leading
    /// edge) unless the device was sent one within `windowMs` (then at that send plus the
    /// window: one trailing push per window) or already `maxPerHour` within the last hour (then
    /// an hour after the oldest of those). `recentSends` are the device's send times, any order.
    public static func dueTime(now: Int64, recentSends: [Int64], windowMs: Int64) -> Int64 {
        let sends = recentSends.sorted(by: >)
        var due = now
        if let last = sends.first { due = max(due, last + max(0, windowMs)) }
        let inHour = sends.filter { $0 > now - hourMs }
        if inHour.count >= maxPerHour { due = max(due, inHour[maxPerHour - 1] + hourMs) }
        return due
    }
}

/// Widget and complication pushes (docs/push.md, "Widgets and complications"): WidgetKit
/// reloads a widget's timeline on `{"aps":{"content-changed":true}}` (the widget reads its data
/// itself); a ClockKit complication is woken by a PushKit complication push. Pure rules.
public enum ProgressPushRules {
    /// The payload of both.
    public static let payload = "{\"aps\":{\"content-changed\":true}}"
    /// Widget pushes per device in any 24 hours by default (WidgetKit's reload budget is a few
    /// dozen a day); the server's `apns.widgetPushesPerDay` setting.
    public static let widgetsPerDay = 40
    /// Complication pushes per device in any 24 hours (Apple's limit for PushKit complication
    /// pushes is 50 a day).
    public static let complicationsPerDay = 50
    /// 24 hours, ms.
    public static let dayMs: Int64 = 86_400_000
    /// How long such a push stays worth sending, ms.
    public static let lifetimeMs: Int64 = 3_600_000

    /// When a pending widget or complication push for a device may be sent: at once (`now`)
    /// unless the device was sent `perDay` of them within the last 24 hours, then 24 hours
    /// after the oldest of those. `perDay` ≤ 0 never sends (`Int64.max`). `recentSends` are the
    /// device's send times of that push type (ms), any order.
    public static func dueTime(now: Int64, recentSends: [Int64], perDay: Int) -> Int64 {
        guard perDay > 0 else { return Int64.max }
        let inDay = recentSends.filter { $0 > now - dayMs }.sorted(by: >)
        return inDay.count >= perDay ? max(now, inDay[perDay - 1] + dayMs) : now
    }

    /// Whether a change of the day's total from `beforeMl` to `afterMl` is worth a reload: it
    /// reached `goalMl`, or moved by at least 5 % of it (either way). Per change.
    public static func moved(beforeMl: Int, afterMl: Int, goalMl: Int) -> Bool {
        guard goalMl > 0, beforeMl != afterMl else { return false }
        if beforeMl < goalMl && afterMl >= goalMl { return true }
        return abs(afterMl - beforeMl) * 20 >= goalMl
    }
}
