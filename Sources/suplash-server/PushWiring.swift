import Foundation
import SuplashAPI
import SuplashAPNs
import SuplashCrypto
import SuplashDomain
import SuplashHTTPClient
import SuplashLogging

/// Wires push delivery from the `apns.*` keys (docs/push.md, "Sender"): with a key, a
/// `PushSender` thread; without one, nothing is sent (devices still register, background rows
/// are still queued, one per device at most, and expire) and `/readyz` says so in its body.
enum PushWiring {
    /// Sets `services.pushStatus` and the push metrics; returns the sender (not started), or nil
    /// when `apns.keyFile` is empty.
    /// - Throws: `Settings.LoadError` for an unreadable or invalid key, a missing key id or team
    ///   id, or an HTTP client that cannot start.
    static func install(
        into services: inout Services, settings: Settings, keyring: SealingKeyring?, store: any PushOutboxRepository,
        logger: Logger
    ) throws -> PushSender? {
        let apns = settings.apns
        let metrics = services.metrics
        metrics.gauge("suplash_push_queue_depth", help: "Pushes waiting in the push outbox.") {
            Double((try? store.pushQueueFigures(now: PushSender.wallClock()))?.pending ?? 0)
        }
        metrics.gauge("suplash_push_oldest_due_age_seconds", help: "Age of the oldest due push (0 when none is due).") {
            let now = PushSender.wallClock()
            guard let due = (try? store.pushQueueFigures(now: now))?.oldestDueAt else { return 0 }
            return Double(max(0, now - due)) / 1000
        }
        guard !apns.keyFile.isEmpty else {
            services.pushStatus = { "off: apns.keyFile is not set; devices register, nothing is sent" }
            return nil
        }
        guard !apns.keyId.isEmpty, !apns.teamId.isEmpty else {
            throw Settings.LoadError(description: "apns.keyId and apns.teamId are required with apns.keyFile")
        }
        // Tokens are kept sealed only (docs/apple.md, "Sealed secrets"): no key, nothing to send.
        guard let keyring else {
            throw Settings.LoadError(description: "security.sealingKeyFile is required with apns.keyFile (push tokens are sealed)")
        }
        guard let pem = FileManager.default.contents(atPath: apns.keyFile) else {
            throw Settings.LoadError(description: "cannot read apns.keyFile")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: Array(pem))
        } catch {
            throw Settings.LoadError(description: "apns.keyFile is not a P-256 private key (.p8)")
        }
        let client: HTTPClient
        do {
            client = try HTTPClient(
                configuration: HTTPClientConfiguration(
                    caFile: apns.caFile.isEmpty ? nil : apns.caFile, maxConcurrentStreams: max(1, apns.maxConcurrentPushes)))
        } catch {
            throw Settings.LoadError(description: "the APNs HTTP/2 client could not start: \(error)")
        }
        let sender = APNsSender(
            client: client, providerToken: APNsProviderToken(key: key, keyID: apns.keyId, teamID: apns.teamId),
            configuration: APNsSenderConfiguration(
                productionURL: apns.productionURL, sandboxURL: apns.sandboxURL,
                maxConcurrentPushes: max(1, apns.maxConcurrentPushes)),
            logger: logger)
        let push = PushSender(
            repository: store, sender: sender, client: client, keyring: keyring,
            backgroundWindowMs: Int64(max(0, apns.backgroundWindowSeconds)) * 1000,
            widgetsPerDay: max(0, apns.widgetPushesPerDay), pollIntervalMs: Int64(max(10, apns.pollIntervalMs)), logger: logger)
        services.pushStatus = { push.status }
        metrics.counters("suplash_push_sent_total", help: "Pushes APNs accepted.", label: "push_type") {
            push.figures.sent.sorted { $0.key < $1.key }.map { ($0.key, Double($0.value)) }
        }
        metrics.counters("suplash_push_failed_total", help: "Pushes given up, by reason code.", label: "reason") {
            push.figures.failed.sorted { $0.key < $1.key }.map { ($0.key, Double($0.value)) }
        }
        metrics.counters("suplash_push_retried_total", help: "Pushes rescheduled, by reason code.", label: "reason") {
            push.figures.retried.sorted { $0.key < $1.key }.map { ($0.key, Double($0.value)) }
        }
        metrics.gauge("suplash_push_paused", help: "1 while the APNs sender is paused on a configuration error.") {
            sender.pausedReason == nil ? 0 : 1
        }
        metrics.gauge("suplash_push_send_seconds_sum", help: "Seconds spent sending batches to APNs since start.") {
            push.figures.sendSeconds
        }
        metrics.gauge("suplash_push_send_seconds_count", help: "Pushes those batches carried.") {
            Double(push.figures.timedPushes)
        }
        return push
    }
}

/// The push sender of one server instance (docs/push.md, "Sender"): one thread (never an
/// event loop) that claims due rows of the push outbox (`PushOutboxRepository.claimDuePushes`:
/// instances never claim one row together), sends them through `APNsSender` (bounded
/// concurrency over one HTTP/2 connection per environment), and records each outcome. A
/// configuration error pauses the sender: rows are kept, a warning is logged once a minute,
/// `/readyz` notes it, and a probe is sent again after 5 minutes.
final class PushSender: @unchecked Sendable {
    /// What the sender counted since start (for `/metrics`).
    struct Figures: Sendable {
        var sent: [String: Int] = [:]
        var failed: [String: Int] = [:]
        var retried: [String: Int] = [:]
        var sendSeconds = 0.0
        var timedPushes = 0
    }

    static let batchSize = 100
    static let leaseMs: Int64 = 300_000
    static let purgeIntervalMs: Int64 = 3_600_000
    static let sentRetentionMs: Int64 = 7 * 24 * 3_600_000
    static let pauseProbeMs: Int64 = 300_000
    static let alarmIntervalMs: Int64 = 60_000

    /// ms since the epoch.
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private let repository: any PushOutboxRepository
    private let sender: APNsSender
    private let client: HTTPClient
    private let keyring: SealingKeyring
    private let backgroundWindowMs: Int64
    private let widgetsPerDay: Int
    private let pollIntervalMs: Int64
    private let logger: Logger
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var stopped = false
    private var started = false
    private var done = false
    private var woken = false
    private var counted = Figures()
    private var stopObserving: (@Sendable () -> Void)?

    init(
        repository: any PushOutboxRepository, sender: APNsSender, client: HTTPClient, keyring: SealingKeyring,
        backgroundWindowMs: Int64, widgetsPerDay: Int, pollIntervalMs: Int64, logger: Logger
    ) {
        self.repository = repository
        self.sender = sender
        self.client = client
        self.keyring = keyring
        self.backgroundWindowMs = backgroundWindowMs
        self.widgetsPerDay = widgetsPerDay
        self.pollIntervalMs = pollIntervalMs
        self.logger = logger
    }

    /// The counters so far.
    var figures: Figures { condition.withLock { counted } }

    /// The `/readyz` body note.
    var status: String {
        if let reason = sender.pausedReason { return "paused: \(reason.rawValue) (configuration error; pushes are kept)" }
        return "sending"
    }

    /// Starts the thread (once).
    func start() {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        guard first else { return }
        let stop = repository.observeQueuedPushes { [weak self] in self?.wake() }
        condition.withLock { stopObserving = stop }
        let thread = Thread { [self] in run() }
        thread.name = "suplash-push"
        thread.start()
    }

    /// Makes the thread claim now instead of at the end of its poll interval (a commit queued
    /// pushes: `PushOutboxRepository.observeQueuedPushes` in this process, `NOTIFY
    /// suplash_pushes` from any instance on PostgreSQL). Wakes during a batch make the next
    /// claim follow it at once; the poll stays the fallback.
    func wake() {
        condition.withLock {
            woken = true
            condition.broadcast()
        }
    }

    /// Stops the thread after the batch in hand, waits for it, and shuts the HTTP/2 client.
    func stop() {
        let stopObserving = condition.withLock {
            stopped = true
            condition.broadcast()
            while started && !done { condition.wait() }
            return self.stopObserving
        }
        stopObserving?()
        let client = client
        let finished = DispatchSemaphore(value: 0)
        Task {
            await client.shutdown(gracePeriod: .seconds(2))
            finished.signal()
        }
        finished.wait()
    }

    /// Waits `ms`, or until woken (`wake`) or stopped; false when stopped.
    private func pause(_ ms: Int64) -> Bool {
        condition.withLock {
            let deadline = Date(timeIntervalSinceNow: Double(ms) / 1000)
            while !stopped && !woken { if !condition.wait(until: deadline) { break } }
            woken = false
            return !stopped
        }
    }

    private func run() {
        defer {
            condition.withLock {
                done = true
                condition.broadcast()
            }
        }
        var lastPurge: Int64 = 0
        var lastAlarm: Int64 = 0
        var pausedSince: Int64?
        while condition.withLock({ !stopped }) {
            let now = Self.wallClock()
            if now - lastPurge >= Self.purgeIntervalMs {
                lastPurge = now
                do {
                    _ = try repository.purgePushes(before: now - Self.sentRetentionMs)
                } catch {
                    logger.warning("push_purge_failed", .errorType(String(reflecting: type(of: error))))
                }
            }
            if let reason = sender.pausedReason {
                let since = pausedSince ?? now
                pausedSince = since
                if now - lastAlarm >= Self.alarmIntervalMs {
                    lastAlarm = now
                    logger.warning("push_sender_paused", .code("reason", reason.rawValue))
                }
                if now - since < Self.pauseProbeMs {
                    guard pause(1000) else { return }
                    continue
                }
                sender.resume()
            }
            pausedSince = nil
            let claimed: [ClaimedPush]
            do {
                claimed = try repository.claimDuePushes(
                    now: now, limit: Self.batchSize, leaseMs: Self.leaseMs, backgroundWindowMs: backgroundWindowMs,
                    widgetsPerDay: widgetsPerDay)
            } catch {
                logger.warning("push_claim_failed", .errorType(String(reflecting: type(of: error))))
                guard pause(pollIntervalMs) else { return }
                continue
            }
            if !claimed.isEmpty { deliver(claimed) }
            if claimed.count < Self.batchSize { guard pause(pollIntervalMs) else { return } }
        }
    }

    /// The request of `push` to the opened token `deviceToken` (lower-case hex), nil when the
    /// row cannot be sent (an id or type we never write).
    static func request(_ push: ClaimedPush, deviceToken: String) -> APNsPush? {
        let hex = Array(push.id)
        guard hex.count == 32, let type = APNsPushType(rawValue: push.pushType.rawValue),
            let environment = APNsEnvironment(rawValue: push.environment.rawValue)
        else { return nil }
        let text = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
        guard let id = UUID(uuidString: text) else { return nil }
        return APNsPush(
            id: id, deviceToken: deviceToken, pushType: type,
            bundleID: push.bundleID, environment: environment, payload: Array(push.payload.utf8),
            expiration: push.expiresAt / 1000, collapseID: push.collapseID, tokenRegisteredAt: push.tokenRegisteredAt)
    }

    /// Sends `claimed` and records every outcome in one store transaction (one durable commit
    /// per batch, not one per push).
    private func deliver(_ claimed: [ClaimedPush]) {
        var sendable: [(ClaimedPush, APNsPush)] = []
        var outcomes: [(ClaimedPush, PushOutcome)] = []
        for push in claimed {
            let deviceToken: String
            switch open(push) {
            case .success(let token): deviceToken = token
            case .failure(let unopened):
                outcomes.append((push, unopened.outcome))
                continue
            }
            if let request = Self.request(push, deviceToken: deviceToken) {
                sendable.append((push, request))
            } else {
                outcomes.append((push, .failed(id: push.id, reason: "Unsendable", dropTokenIndex: nil)))
            }
        }
        if !sendable.isEmpty {
            let started = ContinuousClock.now
            let results = Self.wait(sender, sendable.map(\.1))
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            condition.withLock {
                counted.sendSeconds += seconds
                counted.timedPushes += sendable.count
            }
            let now = Self.wallClock()
            for ((push, _), result) in zip(sendable, results) {
                let outcome: PushOutcome =
                    switch result.outcome {
                    case .sent: .sent(id: push.id, payload: push.payload)
                    case .tokenInvalid(let reason): .failed(id: push.id, reason: reason.rawValue, dropTokenIndex: push.tokenIndex)
                    case .rejected(let reason): .failed(id: push.id, reason: reason.rawValue, dropTokenIndex: nil)
                    case .retryLater(let reason, let after):
                        .retry(
                            id: push.id, attempts: result.attempts,
                            nextAttemptAt: now + max(Int64((after / .milliseconds(1)).rounded(.up)), 1000), reason: reason.rawValue)
                    case .paused(let reason):
                        .retry(id: push.id, attempts: 0, nextAttemptAt: now + Self.alarmIntervalMs, reason: reason.rawValue)
                    }
                outcomes.append((push, outcome))
            }
        }
        do {
            try repository.recordPushOutcomes(outcomes.map(\.1), now: Self.wallClock())
        } catch {
            // The leases end and other attempts follow (at least once).
            logger.warning(
                "push_record_failed", .number("pushes", outcomes.count), .errorType(String(reflecting: type(of: error))))
            return
        }
        for (push, outcome) in outcomes {
            switch outcome {
            case .sent: count(\.sent, push.pushType.rawValue)
            case .retry(_, _, _, let reason): count(\.retried, reason)
            case .failed(_, let reason, let token):
                count(\.failed, reason)
                logger.info(
                    token == nil ? "push_given_up" : "push_token_dropped", .identifier("pushId", push.id),
                    .identifier("deviceId", push.deviceID), .code("reason", reason))
            }
        }
    }

    /// Why a claimed push's sealed token did not open, as the outcome to record for it.
    private struct Unopened: Error {
        let outcome: PushOutcome
    }

    /// Opens the push's sealed token just before sending. A token sealed under a key this
    /// instance lacks (another instance already seals with the new key of a rolling rotation)
    /// waits like a paused sender; one that does not open otherwise is given up and dropped.
    private func open(_ push: ClaimedPush) -> Result<String, Unopened> {
        do {
            return .success(try PushTokenSealing.open(push, keyring: keyring))
        } catch .unknownKeyID {
            logger.warning("push_token_unopenable", .identifier("pushId", push.id), .code("reason", "unknown_key_id"))
            return .failure(
                Unopened(
                    outcome: .retry(
                        id: push.id, attempts: 0, nextAttemptAt: Self.wallClock() + Self.alarmIntervalMs,
                        reason: "SealingKeyMissing")))
        } catch {
            return .failure(Unopened(outcome: .failed(id: push.id, reason: "TokenUnopenable", dropTokenIndex: push.tokenIndex)))
        }
    }

    private func count(_ family: WritableKeyPath<Figures, [String: Int]>, _ key: String) {
        condition.withLock { counted[keyPath: family][key, default: 0] += 1 }
    }

    /// Runs the async batch send from this thread and waits for its results.
    private static func wait(_ sender: APNsSender, _ pushes: [APNsPush]) -> [APNsDeliveryResult] {
        final class Box: @unchecked Sendable {
            var results: [APNsDeliveryResult] = []
        }
        let box = Box()
        let finished = DispatchSemaphore(value: 0)
        Task {
            box.results = await sender.send(pushes)
            finished.signal()
        }
        finished.wait()
        return box.results
    }
}
