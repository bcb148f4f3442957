import Foundation
import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON
import SuplashLogging
import Synchronization

/// Where and how an `APNsSender` sends.
public struct APNsSenderConfiguration: Sendable {
    /// Apple's production origin.
    public static let appleProductionURL = "https://api.push.apple.com"
    /// Apple's sandbox (development) origin.
    public static let appleSandboxURL = "https://api.sandbox.push.apple.com"

    /// Origin for production tokens (`apns.productionURL`), no trailing slash.
    public var productionURL: String
    /// Origin for sandbox tokens (`apns.sandboxURL`), no trailing slash.
    public var sandboxURL: String
    /// Most pushes in flight at once per `send(_:)` call (HTTP/2 streams over one connection).
    public var maxConcurrentPushes: Int
    /// Attempts per push within one `send(_:)` call for retryable failures (429, 5xx, a
    /// broken connection); after that the push comes back as `.retryLater`.
    public var maxAttempts: Int
    /// The backoff between those attempts.
    public var backoff: APNsBackoff
    /// Deadline of one request.
    public var requestTimeout: Duration

    /// Creates a configuration (Apple's origins, 100 in flight, 3 attempts, 1 s…5 min backoff,
    /// 30 s per request).
    public init(
        productionURL: String = appleProductionURL, sandboxURL: String = appleSandboxURL,
        maxConcurrentPushes: Int = 100, maxAttempts: Int = 3, backoff: APNsBackoff = APNsBackoff(),
        requestTimeout: Duration = .seconds(30)
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.maxConcurrentPushes = maxConcurrentPushes
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.requestTimeout = requestTimeout
    }

    /// The origin for `environment`.
    public func origin(_ environment: APNsEnvironment) -> String {
        environment == .production ? productionURL : sandboxURL
    }
}

/// How one push ended within a `send(_:)` call.
public enum APNsDeliveryOutcome: Sendable, Hashable {
    /// Accepted by APNs in `environment` (the other one than registered when the
    /// `BadDeviceToken` retry succeeded: the registry should record the correction).
    case sent(environment: APNsEnvironment)
    /// The token is dead: remove it from the registry.
    case tokenInvalid(APNsReason)
    /// This push was refused for good (bad header, payload too large, invalid token text …).
    case rejected(APNsReason)
    /// Not delivered yet: retry no sooner than `after` (the outbox schedules it).
    case retryLater(APNsReason, after: Duration)
    /// The sender is paused by a configuration error (this push's answer, or an earlier one):
    /// nothing was sent or will be until `resume()`; keep the push.
    case paused(APNsReason)
}

/// The result for one push: its id, the outcome, how many requests were made.
public struct APNsDeliveryResult: Sendable, Hashable {
    /// The push's id.
    public var pushID: UUID
    /// How it ended.
    public var outcome: APNsDeliveryOutcome
    /// Requests made for it (0 when refused or paused before sending).
    public var attempts: Int
}

/// Running totals of a sender, for `/metrics`.
public struct APNsSenderCounters: Sendable, Hashable {
    /// Pushes accepted by APNs.
    public var sent = 0
    /// Requests repeated after a retryable failure, a token refresh or the environment retry.
    public var retried = 0
    /// Pushes that did not end as sent, by reason code.
    public var failedByReason: [String: Int] = [:]
}

/// Sends batches of pushes to APNs over an `HTTPClient` (one HTTP/2 connection per origin),
/// at most `maxConcurrentPushes` at a time, acting on each answer as
/// `APNsResponseClassifier` decides: retries with backoff and jitter, the one retry in the
/// other environment after `BadDeviceToken`, a provider-token refresh after
/// `ExpiredProviderToken`, and a pause on configuration errors (a warning at most once a
/// minute while paused; nothing more is sent until `resume()`).
///
/// Logs carry push ids and reason codes only — never device tokens, payloads or JWTs.
public final class APNsSender: Sendable {
    private let client: HTTPClient
    private let providerToken: APNsProviderToken
    private let configuration: APNsSenderConfiguration
    private let logger: Logger
    private let sleep: @Sendable (Duration) async -> Void
    private let random: @Sendable () -> Double
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(SenderState())

    private struct SenderState {
        var pausedReason: APNsReason?
        var lastAlarm: ContinuousClock.Instant?
        var counters = APNsSenderCounters()
    }

    /// - Parameters:
    ///   - client: the HTTP/2 client (its CA file is the mock's in tests).
    ///   - providerToken: the provider token source.
    ///   - configuration: origins, concurrency, attempts, backoff.
    ///   - logger: where warnings go.
    ///   - sleep: waits between attempts (tests pass one that records and returns at once).
    ///   - random: a uniform value in [0, 1) for the jitter.
    ///   - clock: the monotonic clock for the once-a-minute alarm.
    public init(
        client: HTTPClient, providerToken: APNsProviderToken, configuration: APNsSenderConfiguration,
        logger: Logger = Logger(),
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.client = client
        self.providerToken = providerToken
        self.configuration = configuration
        self.logger = logger
        self.sleep = sleep
        self.random = random
        self.clock = clock
    }

    /// The configuration error that paused the sender, or nil while it sends.
    public var pausedReason: APNsReason? { state.withLock { $0.pausedReason } }

    /// Lets a paused sender send again (after the operator fixed the configuration).
    public func resume() {
        state.withLock {
            $0.pausedReason = nil
            $0.lastAlarm = nil
        }
    }

    /// A snapshot of the running totals.
    public var counters: APNsSenderCounters { state.withLock { $0.counters } }

    /// Sends `pushes`, at most `maxConcurrentPushes` at once, and returns one result per push
    /// in the same order. Never throws: every failure is an outcome.
    public func send(_ pushes: [APNsPush]) async -> [APNsDeliveryResult] {
        var results = [APNsDeliveryResult?](repeating: nil, count: pushes.count)
        let width = max(1, configuration.maxConcurrentPushes)
        await withTaskGroup(of: (Int, APNsDeliveryResult).self) { group in
            var next = 0
            while next < pushes.count && next < width {
                let index = next
                group.addTask { (index, await self.deliver(pushes[index])) }
                next += 1
            }
            while let (index, result) = await group.next() {
                results[index] = result
                if next < pushes.count {
                    let index = next
                    group.addTask { (index, await self.deliver(pushes[index])) }
                    next += 1
                }
            }
        }
        return results.enumerated().map { index, result in
            result ?? APNsDeliveryResult(pushID: pushes[index].id, outcome: .rejected(.other), attempts: 0)
        }
    }

    /// One push, through every retry this call allows.
    private func deliver(_ push: APNsPush) async -> APNsDeliveryResult {
        var environment = push.environment
        var triedOther = false
        var attempts = 0
        var failures = 0
        while true {
            if let reason = pausedReason {
                pause(reason, pushID: push.id)
                return finish(push, .paused(reason), attempts: attempts)
            }
            let token: String
            do {
                token = try providerToken.current()
            } catch {
                pause(.invalidProviderToken, pushID: push.id)
                return finish(push, .paused(.invalidProviderToken), attempts: attempts)
            }
            let request: HTTPClientRequest
            do {
                request = try APNsRequestBuilder.request(
                    for: push, origin: configuration.origin(environment),
                    providerToken: token, timeout: configuration.requestTimeout)
            } catch {
                let reason: APNsReason =
                    switch error {
                    case .invalidDeviceToken: .badDeviceToken
                    case .payloadTooLarge: .payloadTooLarge
                    case .invalidCollapseID: .badCollapseId
                    case .invalidBundleID: .badTopic
                    }
                return finish(push, error == .invalidDeviceToken ? .tokenInvalid(reason) : .rejected(reason), attempts: attempts)
            }

            attempts += 1
            let decision: APNsDecision
            do {
                let response = try await client.send(request)
                let reason = response.status == 200 ? APNsReason.other : APNsReason(body: response.body)
                decision = APNsResponseClassifier.decide(
                    status: response.status, reason: reason,
                    unregisteredAt: Self.timestamp(response.body),
                    registeredAt: push.tokenRegisteredAt,
                    triedOtherEnvironment: triedOther)
            } catch {
                decision = APNsResponseClassifier.decide(error: error)
            }

            switch decision {
            case .sent:
                return finish(push, .sent(environment: environment), attempts: attempts)
            case .retryInOtherEnvironment:
                triedOther = true
                environment = environment.other
                countRetry()
            case .dropToken(let reason):
                logger.info("apns_token_invalid", .identifier("pushId", push.id.uuidString), .code("reason", reason.rawValue))
                return finish(push, .tokenInvalid(reason), attempts: attempts)
            case .refreshProviderTokenAndRetry:
                let refreshed = (try? providerToken.refresh(rejected: token)) ?? false
                guard refreshed else {
                    pause(.expiredProviderToken, pushID: push.id)
                    return finish(push, .paused(.expiredProviderToken), attempts: attempts)
                }
                countRetry()
            case .configurationError(let reason):
                pause(reason, pushID: push.id)
                return finish(push, .paused(reason), attempts: attempts)
            case .rejected(let reason):
                logger.warning("apns_push_rejected", .identifier("pushId", push.id.uuidString), .code("reason", reason.rawValue))
                return finish(push, .rejected(reason), attempts: attempts)
            case .retryLater(let reason):
                failures += 1
                let delay = configuration.backoff.delay(afterAttempt: failures, unitRandom: random())
                if failures >= max(1, configuration.maxAttempts) {
                    logger.warning(
                        "apns_push_deferred", .identifier("pushId", push.id.uuidString), .code("reason", reason.rawValue),
                        .count("attempts", attempts))
                    return finish(push, .retryLater(reason, after: delay), attempts: attempts)
                }
                countRetry()
                await sleep(delay)
            }
        }
    }

    private func finish(_ push: APNsPush, _ outcome: APNsDeliveryOutcome, attempts: Int) -> APNsDeliveryResult {
        state.withLock { state in
            switch outcome {
            case .sent: state.counters.sent += 1
            case .tokenInvalid(let reason), .rejected(let reason), .retryLater(let reason, _), .paused(let reason):
                state.counters.failedByReason[reason.rawValue, default: 0] += 1
            }
        }
        return APNsDeliveryResult(pushID: push.id, outcome: outcome, attempts: attempts)
    }

    private func countRetry() {
        state.withLock { $0.counters.retried += 1 }
    }

    /// Pauses on a configuration error (the first reason stays); the warning is written at most
    /// once a minute for as long as pushes keep meeting the paused sender.
    private func pause(_ reason: APNsReason, pushID: UUID) {
        let now = clock()
        let alarm: Bool = state.withLock { state in
            if state.pausedReason == nil { state.pausedReason = reason }
            if let last = state.lastAlarm, now - last < .seconds(60) { return false }
            state.lastAlarm = now
            return true
        }
        if alarm {
            logger.warning(
                "apns_sender_paused", .code("reason", (pausedReason ?? reason).rawValue),
                .identifier("pushId", pushID.uuidString))
        }
    }

    /// The `timestamp` of a 410 body (Unix milliseconds), if present.
    private static func timestamp(_ body: [UInt8]) -> Int64? {
        guard !body.isEmpty, let value = try? JSONParser.parse(body, maxDepth: 4) else { return nil }
        return value["timestamp"]?.int64Value
    }
}
