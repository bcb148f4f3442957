import Foundation
import SuplashDomain
import SuplashLogging

/// What the offline-sync routes need (spec §5), wired by the executable.
public struct SyncServices: Sendable {
    /// The change feed and the last-write-wins push.
    public var repository: any SyncRepository
    /// `entries:batch`.
    public var batch: any WaterEntryBatchRepository
    /// Sync tokens.
    public var tokens: SyncTokenCodec
    /// Waiting long polls by user.
    public var longPolls: LongPollRegistry
    /// Idempotency-Key records.
    public var idempotency: IdempotencyGuard

    public init(
        repository: any SyncRepository, batch: any WaterEntryBatchRepository, tokens: SyncTokenCodec,
        longPolls: LongPollRegistry, idempotency: IdempotencyGuard
    ) {
        self.repository = repository
        self.batch = batch
        self.tokens = tokens
        self.longPolls = longPolls
        self.idempotency = idempotency
    }
}

/// The sync maintenance job: one timer (a `DispatchSourceTimer` on its own serial
/// queue, not per request) that purges tombstones older than the retention — raising the
/// stored purge horizon — and expired Idempotency-Key records.
///
/// `@unchecked Sendable`: `timer` is set once in `init`; afterwards only `cancel()` is
/// called on it, which Dispatch sources allow from any thread.
public final class SyncMaintenance: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "suplash.sync-maintenance")

    /// Starts the job: first run after 1 s, then every `intervalSeconds`.
    /// - Parameters:
    ///   - retentionDays: tombstone retention (`sync.tombstoneRetentionDays`, default 90).
    public init(
        repository: any SyncRepository, idempotency: any IdempotencyRepository, retentionDays: Int,
        intervalSeconds: Double = 3600, logger: Logger
    ) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        let retentionMillis = Int64(max(0, retentionDays)) * 86_400_000
        timer.setEventHandler {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            do {
                let (purged, horizon) = try repository.purgeTombstones(deletedBefore: now - retentionMillis)
                let expired = try idempotency.purgeIdempotencyRecords(now: now)
                logger.info(
                    "sync_maintenance", .count("tombstonesPurged", purged), .count("purgeHorizon", Int(horizon)),
                    .count("idempotencyRecordsPurged", expired))
            } catch {
                logger.warning("sync_maintenance_failed", .errorType(String(reflecting: type(of: error))))
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
