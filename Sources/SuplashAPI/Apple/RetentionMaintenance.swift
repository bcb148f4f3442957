import Dispatch
import Foundation
import SuplashDomain
import SuplashLogging

/// The retention job of the Apple lifecycle and the mail outbox (docs/apple.md, "Retention"):
/// one timer on its own serial queue that deletes revoke jobs ended more than
/// `AppleRetention.revokeJobMs` ago, Apple event `jti`s older than `AppleRetention.eventMs`, and
/// pending code mail whose code expired (held mail included: a relay address whose forwarding
/// stays off never keeps a code past its expiry). Each instance runs it; the deletes are
/// idempotent, so instances of one PostgreSQL database do not get in each other's way.
///
/// `@unchecked Sendable`: `timer` is set once in `init`; afterwards only `cancel()` is called on
/// it, which Dispatch sources allow from any thread.
public final class RetentionMaintenance: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "suplash.retention-maintenance")

    /// Starts the job: first run after 1 s, then every `intervalSeconds`. Logs
    /// `retention_maintenance` with the counts (ids and counts only).
    public init(
        revokeJobs: any AppleRevokeJobRepository, events: any AppleAccountEventRepository, mail: any OutboxRepository,
        intervalSeconds: Double = 3600, logger: Logger
    ) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            do {
                let jobs = try revokeJobs.purgeRevokeJobs(endedBefore: now - AppleRetention.revokeJobMs)
                let jtis = try events.forgetAppleEvents(receivedBefore: now - AppleRetention.eventMs)
                let expired = try mail.dropExpiredMessages(now: now)
                logger.info(
                    "retention_maintenance", .count("revokeJobsPurged", jobs), .count("appleEventsForgotten", jtis),
                    .count("expiredMailDropped", expired))
            } catch {
                logger.warning("retention_maintenance_failed", .errorType(String(reflecting: type(of: error))))
            }
        }
        timer.schedule(deadline: .now() + 1, repeating: intervalSeconds)
        timer.resume()
    }

    /// Stops the timer (shutdown).
    public func stop() {
        timer.cancel()
    }
}
