import Foundation

/// Why the store failed, in the terms an operator acts on (spec §2; docs/operations.md
/// "Storage errors"). Both store adapters classify their own errors into these kinds:
/// SQLite from its extended result codes, PostgreSQL from SQLSTATE.
public enum StorageFailure: String, Sendable, CaseIterable, Hashable {
    /// The disk (or the database's size limit) is full: SQLite `SQLITE_FULL`, PostgreSQL
    /// 53100 `disk_full`. Transient: writes resume once space is freed.
    case full
    /// The database file is damaged: SQLite `SQLITE_CORRUPT` / `SQLITE_NOTADB`, PostgreSQL
    /// XX001 `data_corrupted` / XX002 `index_corrupted`. Permanent: restore a backup.
    case corrupt
    /// The database cannot be written: SQLite `SQLITE_READONLY*` (file, directory or file
    /// system read-only), PostgreSQL 25006 `read_only_sql_transaction` (a standby, or
    /// `default_transaction_read_only`). Permanent until an operator acts.
    case readOnly
    /// A lock or the connection pool was not free in time: SQLite `SQLITE_BUSY` /
    /// `SQLITE_LOCKED`, PostgreSQL 57014 (statement timeout), 55P03, 40001/40P01 after the
    /// retries, other class 53 (out of memory, too many connections), an exhausted pool. Transient.
    case busy
    /// The operating system failed a read, write or fsync: SQLite `SQLITE_IOERR*` /
    /// `SQLITE_CANTOPEN`, PostgreSQL class 58 (`io_error`, …). Transient as far as the
    /// server can tell; if it repeats, look at the device.
    case io
    /// The store is shutting down: the database was closed (SQLite), or the server is
    /// shutting down or starting (PostgreSQL 57P01–57P05). Transient.
    case shutdown
    /// The connection to the database server failed (PostgreSQL class 08, a lost connection).
    /// Transient.
    case connection

    /// `true` for the kinds an operator must fix (`corrupt`, `readOnly`): the API answers
    /// 503 `storage_failed` without `Retry-After`; the others answer 503 `unavailable` with
    /// `Retry-After` (spec §2).
    public var isPermanent: Bool { self == .corrupt || self == .readOnly }
}

/// The storage's health as requests and the write probe see it: feeds `/readyz` (spec §7),
/// the `suplash_storage_errors_total` counters and the storage-error log lines.
///
/// Store adapters call `record(_:)` for every classified failure; the write probe calls
/// `probeSucceeded()` / `probeFailed(_:)`. Not ready while the latest write probe failed,
/// after any query reported corruption (until restart: a damaged file does not heal), or
/// after a query reported a read-only database until a later write probe succeeds.
///
/// Log lines are rate limited: at most one per kind per `logInterval` seconds, carrying the
/// number of occurrences since the previous line; occurrences after a line are reported by
/// the next `record` or `flush` once the interval has passed.
///
/// `@unchecked Sendable`: every mutable member is guarded by `lock`.
public final class StorageHealth: @unchecked Sendable {
    /// Why the store is not ready.
    public struct Problem: Sendable, Equatable {
        /// The failure's kind.
        public var failure: StorageFailure
        /// `true` when the write probe failed; `false` when a query reported it.
        public var fromWriteProbe: Bool
        /// `true` when a write probe has been running for `probeStallSeconds` or more without
        /// returning (reported as `.io` from the write probe).
        public var stalled: Bool

        public init(failure: StorageFailure, fromWriteProbe: Bool, stalled: Bool = false) {
            self.failure = failure
            self.fromWriteProbe = fromWriteProbe
            self.stalled = stalled
        }
    }

    /// Seconds after which a write probe that has not returned makes storage not ready (30):
    /// far above a healthy probe (an `fallocate`, then a `BEGIN IMMEDIATE` behind the queued
    /// group commits, within the busy timeout), so only a hung file system or disk reaches it.
    public static let probeStallSeconds: Double = 30

    /// Receives the rate-limited log lines: the kind and its occurrences since the last line.
    public typealias LogSink = @Sendable (_ failure: StorageFailure, _ occurrences: Int) -> Void

    private let lock = NSLock()
    private let clock: @Sendable () -> Double
    private let logInterval: Double
    private var sink: LogSink?
    private var totals: [StorageFailure: Int] = [:]
    private var unlogged: [StorageFailure: Int] = [:]
    private var lastLine: [StorageFailure: Double] = [:]
    private var probeFailure: StorageFailure?
    private var probeRuns = 0
    private var corruptionSeen = false
    private var readOnlySeen = false
    private var probeStartedAt: Double?

    /// - Parameters:
    ///   - logInterval: seconds between two log lines of one kind (60 in production).
    ///   - clock: monotonic seconds (default: `ProcessInfo.systemUptime`); tests pass their own.
    public init(logInterval: Double = 60, clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.logInterval = logInterval
        self.clock = clock
    }

    /// Sets where log lines go (the executable logs at warning for transient kinds, error
    /// for permanent ones). Lines due before a sink is set are kept until the next `flush`.
    public func setLogSink(_ sink: @escaping LogSink) {
        lock.withLock { self.sink = sink }
    }

    /// Counts one classified storage failure reported by a query or commit.
    public func record(_ failure: StorageFailure) {
        let line: (LogSink, Int)? = lock.withLock {
            totals[failure, default: 0] += 1
            unlogged[failure, default: 0] += 1
            if failure == .corrupt { corruptionSeen = true }
            if failure == .readOnly { readOnlySeen = true }
            return dueLine(failure, now: clock())
        }
        if let (sink, count) = line { sink(failure, count) }
    }

    /// Records that a write probe starts: until it returns (`probeSucceeded` /
    /// `probeFailed`), a probe running for `probeStallSeconds` or more makes storage not
    /// ready — a probe stuck in a hung `fsync` would otherwise leave the last success standing.
    public func probeStarted() {
        lock.withLock { probeStartedAt = clock() }
    }

    /// Records a successful write probe: clears a probe failure and a reported read-only state.
    public func probeSucceeded() {
        lock.withLock {
            probeRuns += 1
            probeFailure = nil
            probeStartedAt = nil
            readOnlySeen = false
        }
    }

    /// Records a failed write probe. The failure itself is counted where it was classified
    /// (the store's `record` call), not again here.
    public func probeFailed(_ failure: StorageFailure) {
        lock.withLock {
            probeRuns += 1
            probeFailure = failure
            probeStartedAt = nil
        }
    }

    /// Emits the log lines whose interval has passed and that have occurrences to report.
    /// The write probe loop calls it after each probe.
    public func flush() {
        let lines: [(LogSink, StorageFailure, Int)] = lock.withLock {
            let now = clock()
            return StorageFailure.allCases.compactMap { failure in
                dueLine(failure, now: now).map { ($0.0, failure, $0.1) }
            }
        }
        for (sink, failure, count) in lines { sink(failure, count) }
    }

    /// Caller holds `lock`. The sink and the count to log for `failure` if a line is due.
    private func dueLine(_ failure: StorageFailure, now: Double) -> (LogSink, Int)? {
        guard let sink, let count = unlogged[failure], count > 0 else { return nil }
        if let last = lastLine[failure], now - last < logInterval { return nil }
        lastLine[failure] = now
        unlogged[failure] = 0
        return (sink, count)
    }

    /// Why the store is not ready, or nil when it is: corruption reported by a query first,
    /// then the latest write probe's failure, then a write probe that has not returned for
    /// `probeStallSeconds` (`.io`, stalled), then a read-only report not yet cleared by a probe.
    public var problem: Problem? {
        lock.withLock {
            if corruptionSeen { return Problem(failure: .corrupt, fromWriteProbe: false) }
            if let probeFailure { return Problem(failure: probeFailure, fromWriteProbe: true) }
            if let probeStartedAt, clock() - probeStartedAt >= Self.probeStallSeconds {
                return Problem(failure: .io, fromWriteProbe: true, stalled: true)
            }
            if readOnlySeen { return Problem(failure: .readOnly, fromWriteProbe: false) }
            return nil
        }
    }

    /// Failures counted per kind since start (every kind present, zero when none).
    public var totalsByKind: [(StorageFailure, Int)] {
        lock.withLock { StorageFailure.allCases.map { ($0, totals[$0] ?? 0) } }
    }

    /// Write probes run since start.
    public var writeProbes: Int { lock.withLock { probeRuns } }
}

/// A store that can check, cheaply and without growing the database, that it takes writes
/// now (`/readyz`; docs/operations.md "Write probe").
public protocol StorageWriteProbe: Sendable {
    /// Returns when a write would be accepted now.
    /// - Throws: `RepositoryError.storage(kind)` with the reason, or `.unavailable`.
    func probeWrite() throws
}
