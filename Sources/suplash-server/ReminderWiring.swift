import Foundation
import SuplashAPI
import SuplashDomain
import SuplashLogging

/// Wires the reminder scheduler (docs/reminders.md, "Scheduler") from the `reminders.*` keys:
/// one `ReminderScheduler` thread per instance; several instances share the work through the
/// claim's `SKIP LOCKED`.
enum ReminderWiring {
    /// The scheduler (not started), or nil when `reminders.schedulerEnabled` is false.
    static func install(
        settings: Settings, store: any ReminderRepository, campaigns: any CampaignRepository, messages: MessageCatalogue,
        counters: ReminderCounters, logger: Logger
    ) -> ReminderScheduler? {
        guard settings.reminders.schedulerEnabled else { return nil }
        return ReminderScheduler(
            repository: store, campaigns: campaigns, messages: messages, counters: counters,
            batchSize: max(1, settings.reminders.batchSize),
            pollIntervalMs: Int64(max(10, settings.reminders.pollIntervalMs)),
            historyMs: Int64(max(0, settings.reminders.historyDays)) * 86_400_000, clock: ReminderScheduler.wallClock,
            logger: logger)
    }
}

/// The reminder scheduler of one server instance: one thread that runs
/// `ReminderRepository.dispatchDueReminders` with the time of `clock` — a full batch is followed
/// at once by the next, else it waits `pollIntervalMs` — and counts what it did. The pushes it
/// queues are sent by the push sender (`PushSender`). At start and then once an hour it deletes
/// the history older than `historyMs` (`ReminderRepository.purgeReminderHistory`): a few batches
/// between two steps, so a long backlog (the first run after an upgrade) never holds up due
/// reminders by more than those batches.
final class ReminderScheduler: @unchecked Sendable {
    /// ms since the epoch, the production clock.
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private let repository: any ReminderRepository
    private let campaigns: any CampaignRepository
    private let messages: MessageCatalogue
    private let counters: ReminderCounters
    private let batchSize: Int
    private let pollIntervalMs: Int64
    /// How long ended reminders are kept, ms; 0 keeps them all.
    private let historyMs: Int64
    private let clock: @Sendable () -> Int64
    private let logger: Logger
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var stopped = false
    private var started = false
    private var done = false

    init(
        repository: any ReminderRepository, campaigns: any CampaignRepository, messages: MessageCatalogue,
        counters: ReminderCounters, batchSize: Int, pollIntervalMs: Int64, historyMs: Int64,
        clock: @escaping @Sendable () -> Int64, logger: Logger
    ) {
        self.repository = repository
        self.campaigns = campaigns
        self.messages = messages
        self.counters = counters
        self.batchSize = batchSize
        self.pollIntervalMs = pollIntervalMs
        self.historyMs = historyMs
        self.clock = clock
        self.logger = logger
    }

    /// Starts the thread (once).
    func start() {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = "suplash-reminders"
        thread.start()
    }

    /// Stops the thread after the batch in hand and waits for it.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
            while started && !done { condition.wait() }
        }
    }

    /// One step at `clock()`: reaches up to `batchSize` users of a campaign, then sends what is
    /// due; what it sent. A failed campaign batch is logged and left for the next step; the due
    /// reminders are sent either way.
    /// - Throws: `RepositoryError` (sending).
    @discardableResult func step() throws -> ReminderDispatchReport {
        do {
            _ = try campaigns.expandCampaigns(now: clock(), limit: batchSize)
        } catch {
            logger.warning("campaign_expansion_failed", .errorType(String(reflecting: type(of: error))))
        }
        let report = try repository.dispatchDueReminders(now: clock(), limit: batchSize, messages: messages)
        counters.add(.sent, report.sent)
        counters.add(.ignored, report.ignored)
        counters.add(.scheduled, report.scheduled)
        counters.add(.expired, report.expired)
        return report
    }

    /// How often the history is purged, ms.
    static let purgeIntervalMs: Int64 = 3_600_000
    /// Rows deleted per purge transaction (a short write: other writers wait behind it).
    static let purgeBatch = 2_000
    /// Purge transactions between two scheduler steps.
    static let purgeBatchesPerStep = 5

    /// Deletes up to `purgeBatchesPerStep` batches of the history older than `historyMs` before
    /// `clock()`: how many rows, and whether older ones are left (the last batch was full).
    /// - Throws: `RepositoryError`.
    func purgeHistory() throws -> (deleted: Int, more: Bool) {
        guard historyMs > 0 else { return (0, false) }
        let cutoff = clock() - historyMs
        var deleted = 0
        for _ in 0..<Self.purgeBatchesPerStep {
            let n = try repository.purgeReminderHistory(dueBefore: cutoff, limit: Self.purgeBatch)
            deleted += n
            if n < Self.purgeBatch { return (deleted, false) }
        }
        return (deleted, true)
    }

    private func run() {
        defer {
            condition.withLock {
                done = true
                condition.broadcast()
            }
        }
        var purgeAt = clock()
        var purged = 0
        while condition.withLock({ !stopped }) {
            var full = false
            if clock() >= purgeAt {
                do {
                    let (deleted, more) = try purgeHistory()
                    purged += deleted
                    full = more
                    if !more {
                        purgeAt = clock() + Self.purgeIntervalMs
                        if purged > 0 { logger.info("reminder_history_purged", .count("reminders", purged)) }
                        purged = 0
                    }
                } catch {
                    purgeAt = clock() + Self.purgeIntervalMs
                    logger.warning("reminder_history_purge_failed", .errorType(String(reflecting: type(of: error))))
                }
            }
            do {
                let report = try step()
                full = full || (report.claimed >= batchSize && report.skipped < report.claimed)
            } catch {
                logger.warning("reminder_dispatch_failed", .errorType(String(reflecting: type(of: error))))
            }
            if full { continue }
            let keepGoing = condition.withLock {
                let deadline = Date(timeIntervalSinceNow: Double(pollIntervalMs) / 1000)
                while !stopped { if !condition.wait(until: deadline) { break } }
                return !stopped
            }
            guard keepGoing else { return }
        }
    }
}
