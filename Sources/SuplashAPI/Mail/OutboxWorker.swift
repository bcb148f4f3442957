import Foundation
import SuplashDomain
import SuplashLogging

/// Retry schedule of the mail outbox: exponential backoff with jitter.
public struct OutboxRetryPolicy: Sendable {
    /// Delay after the first failed attempt, ms (default 2 s); doubles per attempt.
    public var baseDelayMs: Int64 = 2_000
    /// Largest delay, ms (default 1 h).
    public var maxDelayMs: Int64 = 3_600_000
    /// Attempts before a message is abandoned (default 20: about 14 hours of retries).
    public var maxAttempts = 20
    /// The worker rescans the table at least this often even without a wake-up, ms (default 30 s).
    public var scanIntervalMs: Int64 = 30_000
    /// Messages taken per pass.
    public var batchSize = 16
    /// How long a claimed message is reserved for this worker before another instance may
    /// retry it, ms (default 5 min; well above a transport's timeout, 10 s for Resend).
    public var claimLeaseMs: Int64 = 300_000

    /// The defaults above.
    public init() {}

    /// The delay after failed attempt number `attempts` (1-based), "equal jitter": half of
    /// `min(maxDelay, base × 2^(attempts−1))` plus a random part of up to the other half.
    /// `random(upper)` returns a value in `0...upper`.
    public func delay(afterAttempt attempts: Int, random: (Int64) -> Int64) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 40)
        let (scaled, overflow) = baseDelayMs.multipliedReportingOverflow(by: Int64(1) << exponent)
        let full = overflow ? maxDelayMs : min(maxDelayMs, scaled)
        let half = full / 2
        return half + max(0, min(full - half, random(full - half)))
    }
}

/// The outbox delivery worker: one thread that sends due messages through the transport,
/// marks them delivered, and reschedules failures with exponential backoff and jitter. It
/// sleeps on a condition until `wake()` (called after a commit that added a message), the
/// next scheduled retry, or the periodic rescan — whichever is first.
///
/// A message is marked delivered only after the transport succeeded; if the process dies in
/// between, the next attempt carries the same message id (the provider's `Idempotency-Key`),
/// so it is never sent twice.
public final class OutboxWorker: @unchecked Sendable {
    let repository: any OutboxRepository
    let transport: any MailTransport
    let policy: OutboxRetryPolicy
    let clock: @Sendable () -> Int64
    let random: @Sendable (Int64) -> Int64
    let logger: Logger
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var woken = false
    private var stopped = false
    private var started = false
    private let attemptCondition = NSCondition()
    // Guarded by `attemptCondition`: ids of recently attempted messages, oldest first (≤ 1024).
    private var attempted: [String] = []
    private var attemptedSet: Set<String> = []

    /// - Parameters:
    ///   - clock: ms since the epoch (tests inject a fake).
    ///   - random: a value in `0...upper` (jitter; tests inject a fixed one).
    public init(
        repository: any OutboxRepository, transport: any MailTransport, policy: OutboxRetryPolicy = OutboxRetryPolicy(),
        logger: Logger,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        random: @escaping @Sendable (Int64) -> Int64 = { $0 > 0 ? Int64.random(in: 0...$0) : 0 }
    ) {
        self.repository = repository
        self.transport = transport
        self.policy = policy
        self.logger = logger
        self.clock = clock
        self.random = random
    }

    /// Starts the delivery thread (once).
    public func start() {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = "suplash-outbox"
        thread.start()
    }

    /// Wakes the thread: a message was committed.
    public func wake() {
        condition.withLock {
            woken = true
            condition.signal()
        }
    }

    /// Asks the thread to stop after the message in hand (does not wait for it).
    public func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private var isStopped: Bool { condition.withLock { stopped } }

    /// Blocks until the worker has made an attempt (successful or not) at message `id`, or
    /// `timeoutSeconds` passed. Returns true when an attempt was made.
    @discardableResult
    public func waitForAttempt(id: String, timeoutSeconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        return attemptCondition.withLock {
            while !attemptedSet.contains(id) {
                if !attemptCondition.wait(until: deadline) { return attemptedSet.contains(id) }
            }
            return true
        }
    }

    private func recordAttempt(_ id: String) {
        attemptCondition.withLock {
            if attemptedSet.insert(id).inserted { attempted.append(id) }
            if attempted.count > 1024 {
                let drop = attempted.count - 1024
                for old in attempted.prefix(drop) { attemptedSet.remove(old) }
                attempted.removeFirst(drop)
            }
            attemptCondition.broadcast()
        }
    }

    private func run() {
        while true {
            let proceed = condition.withLock {
                woken = false
                return !stopped
            }
            guard proceed else { return }
            let attempted = deliverDue()
            if attempted >= policy.batchSize { continue }
            let now = clock()
            var wakeAt = now + policy.scanIntervalMs
            // The 250 ms floor keeps a message whose failure could not be recorded (a failing
            // write) from being retried in a tight loop; a wake-up still cuts the wait short.
            if let next = try? repository.nextAttemptTime() { wakeAt = min(wakeAt, max(next, now + 250)) }
            condition.withLock {
                while !woken && !stopped {
                    let remaining = wakeAt - clock()
                    if remaining <= 0 { break }
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(remaining) / 1000))
                }
            }
        }
    }

    /// One pass: attempts every due message (at most `batchSize`); returns the number attempted.
    /// Runs on the worker thread; tests call it directly with an injected clock.
    @discardableResult
    public func deliverDue() -> Int {
        let due: [OutboxMessage]
        do {
            due = try repository.claimDueMessages(now: clock(), limit: policy.batchSize, leaseMs: policy.claimLeaseMs)
        } catch {
            logger.warning("outbox_read_failed", .errorType(String(reflecting: type(of: error))))
            return 0
        }
        var attempted = 0
        for message in due {
            if isStopped { break }
            attempted += 1
            let attempt = message.attempts + 1
            defer { recordAttempt(message.id) }
            do {
                try transport.deliver(message)
            } catch {
                let (abandon, kind): (Bool, String)
                switch error {
                case .temporary(let k): (abandon, kind) = (attempt >= policy.maxAttempts, k)
                case .permanent(let k): (abandon, kind) = (true, k)
                }
                let now = clock()
                let next = now + policy.delay(afterAttempt: attempt, random: random)
                do {
                    try repository.markAttemptFailed(
                        id: message.id, attempts: attempt, nextAttemptAt: next, abandon: abandon,
                        errorKind: kind, now: now)
                } catch {
                    logger.warning("outbox_write_failed", .errorType(String(reflecting: type(of: error))))
                }
                if abandon {
                    logger.warning("mail_abandoned", .number("attempt", attempt), .errorType(kind))
                } else {
                    logger.warning("mail_delivery_failed", .number("attempt", attempt), .errorType(kind))
                }
                continue
            }
            do {
                try repository.markDelivered(id: message.id, now: clock())
                logger.info("mail_delivered", .number("attempt", attempt))
            } catch {
                // Sent but not marked: the retry reuses the id, so the provider deduplicates it.
                logger.warning("outbox_write_failed", .errorType(String(reflecting: type(of: error))))
            }
        }
        return attempted
    }
}
