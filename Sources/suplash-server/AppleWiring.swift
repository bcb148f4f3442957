import Foundation
import SuplashAPI
import SuplashAppleID
import SuplashCrypto
import SuplashDomain
import SuplashHTTPClient
import SuplashLogging
import Synchronization

/// Apple's token and revoke endpoints over the libcurl client (`SuplashHTTPClient`), with the
/// cached ES256 client secret (`AppleClientSecretIssuer`) — docs/apple.md.
final class AppleIDEndpoint: AppleCodeExchanging, Sendable {
    let client: HTTPClient
    let secrets: AppleClientSecretIssuer
    let tokenURL: String
    let revokeURL: String
    /// Log reasons of failed exchanges that are not Apple error codes.
    static let secretUnsigned = "client_secret_unsigned"
    static let noRefreshToken = "no_refresh_token"

    init(client: HTTPClient, secrets: AppleClientSecretIssuer, tokenURL: String, revokeURL: String) {
        self.client = client
        self.secrets = secrets
        self.tokenURL = tokenURL
        self.revokeURL = revokeURL
    }

    /// Sends `request` and waits for the answer on the calling thread.
    private func call(_ request: HTTPClientRequest) -> Result<HTTPClientResponse, HTTPClientError> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<HTTPClientResponse, HTTPClientError>?>(nil)
        client.send(request) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 } ?? .failure(.shutDown)
    }

    private func decide(_ result: Result<HTTPClientResponse, HTTPClientError>) -> (AppleIDDecision, HTTPClientResponse?) {
        switch result {
        case .success(let response): (AppleIDResponseClassifier.decide(response), response)
        case .failure(let error): (AppleIDResponseClassifier.decide(error: error), nil)
        }
    }

    func exchange(code: String, clientID: String) -> AppleCodeExchangeResult {
        let secret: String
        do { secret = try secrets.secret(clientID: clientID) } catch { return .failed(code: Self.secretUnsigned) }
        let (decision, response) = decide(
            call(AppleIDRequestBuilder.tokenRequest(tokenURL: tokenURL, clientID: clientID, clientSecret: secret, code: code)))
        switch decision {
        case .succeeded:
            guard let body = response?.body, let answer = AppleTokenResponse(body: body), let token = answer.refreshToken,
                !token.isEmpty
            else {
                return .failed(code: Self.noRefreshToken)
            }
            return .refreshToken(token, subject: answer.idTokenSubject)
        case .invalidGrant:
            return .invalidGrant
        case .configurationError(let code):
            secrets.discard(clientID: clientID)
            return .failed(code: code.rawValue)
        case .retryLater(let code, _), .rejected(let code):
            return .failed(code: code.rawValue)
        }
    }

    /// One revoke call for `refreshToken` issued to `clientID`.
    func revoke(refreshToken: String, clientID: String) -> AppleIDDecision {
        let secret: String
        do { secret = try secrets.secret(clientID: clientID) } catch { return .configurationError(.other) }
        let decision = decide(
            call(
                AppleIDRequestBuilder.revokeRequest(
                    revokeURL: revokeURL, clientID: clientID, clientSecret: secret, refreshToken: refreshToken))
        ).0
        if case .configurationError = decision { secrets.discard(clientID: clientID) }
        return decision
    }
}

/// The revoke thread (docs/apple.md, "Revocation"): claims due revoke jobs (`OutboxClaim`,
/// so two instances never send one job), opens each sealed token just before sending it, and
/// records the outcome (`AppleRevokeStep`). On a configuration error every job pauses for
/// `apple.configurationPauseSeconds` and one warning is logged per pause.
final class AppleRevokeSender: @unchecked Sendable {
    let repository: any AppleRevokeJobRepository
    let endpoint: AppleIDEndpoint
    let keyring: SealingKeyring
    let policy: AppleIDRetryPolicy
    let pauseMs: Int64
    let logger: Logger
    let scanIntervalMs: Int64 = 30_000
    let leaseMs: Int64 = 300_000
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var woken = false
    private var stopped = false
    private var pausedUntil: Int64 = 0
    /// Counters by outcome (`revoked`, `already_revoked`, `retried`, `given_up`, `paused`).
    let counts = Mutex<[String: Int]>([:])

    init(
        repository: any AppleRevokeJobRepository, endpoint: AppleIDEndpoint, keyring: SealingKeyring,
        policy: AppleIDRetryPolicy, pauseSeconds: Int, logger: Logger
    ) {
        self.repository = repository
        self.endpoint = endpoint
        self.keyring = keyring
        self.policy = policy
        self.pauseMs = Int64(max(1, pauseSeconds)) * 1000
        self.logger = logger
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "suplash-apple-revoke"
        thread.start()
    }

    /// Sends due jobs now (after an erasure queued one).
    func wake() {
        condition.withLock {
            woken = true
            condition.signal()
        }
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func count(_ outcome: String) { counts.withLock { $0[outcome, default: 0] += 1 } }

    private func run() {
        while true {
            let (proceed, paused) = condition.withLock {
                woken = false
                return (!stopped, pausedUntil)
            }
            guard proceed else { return }
            if Self.now() >= paused { sendDue() }
            let now = Self.now()
            var wakeAt = max(now + scanIntervalMs, 0)
            let pauseEnd = condition.withLock { pausedUntil }
            if pauseEnd > now {
                wakeAt = pauseEnd
            } else if let next = try? repository.nextRevokeAttemptTime() {
                wakeAt = min(wakeAt, max(next, now + 250))
            }
            condition.withLock {
                while !woken && !stopped {
                    let remaining = wakeAt - Self.now()
                    if remaining <= 0 { break }
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(remaining) / 1000))
                }
            }
        }
    }

    private func sendDue() {
        let jobs: [AppleRevokeJob]
        do {
            jobs = try repository.claimDueRevokeJobs(now: Self.now(), limit: 8, leaseMs: leaseMs)
        } catch {
            logger.warning("apple_revoke_read_failed", .errorType(String(reflecting: type(of: error))))
            return
        }
        for (index, job) in jobs.enumerated() {
            let attempt = job.attempts + 1
            let token: String
            do throws(SealingError) {
                token = try keyring.openText(
                    job.sealedRefreshToken,
                    context: SealingContext(table: "apple_identities", column: "refresh_token", rowID: job.sub))
            } catch {
                logger.warning("apple_revoke_token_unopenable", .errorType(String(reflecting: type(of: error))))
                if case .unknownKeyID = error {
                    // Sealed with a key this instance lacks (another instance already has the new
                    // key of a rotation): left for one that can open it, attempts unchanged.
                    record(job, attempt: job.attempts, .retry(nextAttemptAt: Self.now() + pauseMs, errorCode: "unsealing_failed"))
                    count("retried")
                } else {
                    record(job, attempt: attempt, .failed(errorCode: "unsealing_failed"))
                    count("given_up")
                }
                continue
            }
            let decision = endpoint.revoke(refreshToken: token, clientID: job.clientID)
            let now = Self.now()
            switch AppleRevokeStep.after(decision, attempt: attempt, policy: policy, unitRandom: Double.random(in: 0..<1)) {
            case .done:
                record(job, attempt: attempt, .done)
                count(decision == .succeeded ? "revoked" : "already_revoked")
            case .retry(let delay, let code):
                record(job, attempt: attempt, .retry(nextAttemptAt: now + delay * 1000, errorCode: code.rawValue))
                count("retried")
            case .giveUp(let code):
                record(job, attempt: attempt, .failed(errorCode: code.rawValue))
                count("given_up")
                logger.warning("apple_revoke_given_up", .code("appleError", code.rawValue), .count("attempts", attempt))
            case .pause(let code):
                // This job and the rest of the batch wait for the pause, attempts unchanged.
                for waiting in jobs[index...] {
                    record(waiting, attempt: waiting.attempts, .retry(nextAttemptAt: now + pauseMs, errorCode: code.rawValue))
                }
                condition.withLock { pausedUntil = now + pauseMs }
                count("paused")
                logger.warning(
                    "apple_revoke_paused", .code("appleError", code.rawValue),
                    .number("pauseSeconds", Int(pauseMs / 1000)))
                return
            }
        }
    }

    private func record(_ job: AppleRevokeJob, attempt: Int, _ outcome: AppleRevokeOutcome) {
        do {
            try repository.recordRevokeAttempt(id: job.id, attempts: attempt, outcome: outcome, now: Self.now())
        } catch {
            logger.warning("apple_revoke_record_failed", .errorType(String(reflecting: type(of: error))))
        }
    }
}

/// Wires the Sign in with Apple lifecycle from `apple.*` and `security.*`: the code exchange,
/// the revoke thread and Apple's account events.
enum AppleWiring {
    /// Sets `services.appleCodeExchange` and `services.appleNotifications`; returns the revoke
    /// thread (not started) when the exchange is configured.
    /// - Throws: `Settings.LoadError` for a partial `apple.teamID`/`keyID`/`privateKeyFile`, an
    ///   unreadable key, a missing `security.sealingKeyFile`, or a client that cannot start.
    static func install(
        into services: inout Services, settings: Settings, keyring: SealingKeyring?, store: any SuplashStore,
        metrics: Metrics, logger: Logger
    ) throws -> AppleRevokeSender? {
        let apple = settings.apple
        if let keySet = services.apple?.keySet {
            services.appleNotifications = AppleNotifications(
                keySet: keySet, audiences: Set(apple.audiences), repository: store)
        }
        let parts = [apple.teamID, apple.keyID, apple.privateKeyFile]
        guard parts.contains(where: { !$0.isEmpty }) else {
            if !apple.audiences.isEmpty { logger.warning("apple_code_exchange_off") }
            return nil
        }
        guard !parts.contains(where: \.isEmpty) else {
            throw Settings.LoadError(description: "apple.teamID, apple.keyID and apple.privateKeyFile go together")
        }
        guard let keyring else {
            throw Settings.LoadError(
                description: "the Apple code exchange keeps refresh tokens sealed: set security.sealingKeyFile")
        }
        guard let pem = FileManager.default.contents(atPath: apple.privateKeyFile),
            let key = try? ES256PrivateKey(pem: Array(pem))
        else {
            throw Settings.LoadError(description: "apple.privateKeyFile is not readable as a PKCS#8 P-256 key")
        }
        let client: HTTPClient
        do {
            client = try HTTPClient(
                configuration: HTTPClientConfiguration(caFile: apple.caFile.isEmpty ? nil : apple.caFile))
        } catch {
            throw Settings.LoadError(description: "cannot start the HTTP client for Apple (\(error))")
        }
        let endpoint = AppleIDEndpoint(
            client: client,
            secrets: AppleClientSecretIssuer(
                key: key, keyID: apple.keyID, teamID: apple.teamID,
                lifetimeSeconds: Int64(apple.clientSecretLifetimeSeconds)),
            tokenURL: apple.tokenURL, revokeURL: apple.revokeURL)
        services.appleCodeExchange = AppleCodeExchange(endpoint: endpoint, keyring: keyring, logger: logger)
        let sender = AppleRevokeSender(
            repository: store, endpoint: endpoint, keyring: keyring,
            policy: AppleIDRetryPolicy(baseSeconds: Int64(apple.revokeRetryBaseSeconds), maxAttempts: apple.revokeMaxAttempts),
            pauseSeconds: apple.configurationPauseSeconds, logger: logger)
        services.appleRevokeWake = { sender.wake() }
        metrics.counters(
            "suplash_apple_revoke_attempts_total", help: "Revoke job attempts by outcome since start.", label: "outcome"
        ) {
            sender.counts.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key, Double($0.value)) } }
        }
        metrics.gauge("suplash_apple_revoke_jobs_pending", help: "Apple revoke jobs waiting.") {
            Double((try? store.revokeJobCounts().pending) ?? 0)
        }
        metrics.gauge("suplash_apple_revoke_jobs_failed", help: "Apple revoke jobs given up (kept for the operator).") {
            Double((try? store.revokeJobCounts().failed) ?? 0)
        }
        return sender
    }
}
