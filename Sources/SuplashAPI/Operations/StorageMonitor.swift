import Foundation
import SuplashDomain
import SuplashLogging

/// Keeps `StorageHealth` current and visible (spec §2, §7; docs/operations.md "Storage
/// errors"): runs the store's write probe every `intervalSeconds` on its own serial queue,
/// writes the rate-limited storage-error log lines (warning for transient kinds, error for
/// corrupt and read-only), and registers the storage metrics:
///
/// - `suplash_storage_errors_total{kind}` (counter): classified storage failures since start,
///   per kind (`full`, `corrupt`, `read_only`, `busy`, `io`, `shutdown`, `connection`).
/// - `suplash_storage_write_probe_ok` (gauge): 1 when the latest write probe succeeded (or
///   none has run yet), 0 when it failed.
/// - `suplash_storage_ready` (gauge): 1 when storage health lets `/readyz` answer 200.
///
/// `@unchecked Sendable`: `timer` is set once in `init`; afterwards only `cancel()` is called
/// on it, which Dispatch sources allow from any thread. `probeFailing` is touched only on `queue`.
public final class StorageMonitor: @unchecked Sendable {
    /// The state the probe and the stores feed.
    public let health: StorageHealth
    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "suplash.storage-monitor")
    private var probeFailing = false

    /// Starts the monitor: sets `health`'s log sink, registers the metrics, and (when
    /// `intervalSeconds > 0`) probes at once, then every `intervalSeconds`.
    /// - Parameters:
    ///   - probe: the store's write probe.
    ///   - intervalSeconds: seconds between probes (`storage.writeProbeIntervalSeconds`);
    ///     0 turns the probe off (storage failures reported by queries still count).
    public init(
        health: StorageHealth, probe: any StorageWriteProbe, intervalSeconds: Double, metrics: Metrics,
        logger: Logger
    ) {
        self.health = health
        health.setLogSink { failure, occurrences in
            Self.log(failure, occurrences: occurrences, logger: logger)
        }
        metrics.counters(
            "suplash_storage_errors_total", help: "Classified storage failures since start, by kind.",
            label: "kind"
        ) {
            health.totalsByKind.map { (Self.metricLabel($0.0), Double($0.1)) }
        }
        metrics.gauge(
            "suplash_storage_write_probe_ok",
            help: "1 when the latest storage write probe succeeded (or none ran yet), 0 when it failed."
        ) {
            health.problem?.fromWriteProbe == true ? 0 : 1
        }
        metrics.gauge("suplash_storage_ready", help: "1 when storage health lets /readyz answer 200.") {
            health.problem == nil ? 1 : 0
        }
        timer = DispatchSource.makeTimerSource(queue: queue)
        guard intervalSeconds > 0 else { return }
        timer.setEventHandler { [self] in
            runProbe(probe, logger: logger)
        }
        timer.schedule(deadline: .now(), repeating: intervalSeconds)
        timer.resume()
    }

    /// One probe: records its result, logs a change of state, flushes due log lines. On `queue`.
    private func runProbe(_ probe: any StorageWriteProbe, logger: Logger) {
        health.probeStarted()
        do {
            try probe.probeWrite()
            health.probeSucceeded()
            if probeFailing {
                probeFailing = false
                logger.info("storage_write_probe_recovered")
            }
        } catch {
            let failure: StorageFailure = if case RepositoryError.storage(let kind) = error { kind } else { .io }
            health.probeFailed(failure)
            if !probeFailing {
                probeFailing = true
                logger.warning("storage_write_probe_failed", .errorType(String(reflecting: type(of: error))))
            }
        }
        health.flush()
    }

    /// Stops probing (shutdown) and waits for a probe in progress, so none runs while the
    /// database closes.
    public func stop() {
        timer.cancel()
        queue.sync {}
    }

    /// The `kind` label of a failure in metrics and docs (snake case).
    static func metricLabel(_ failure: StorageFailure) -> String {
        failure == .readOnly ? "read_only" : failure.rawValue
    }

    /// One rate-limited line: `storage_error_<kind>` with the occurrences since the last line.
    static func log(_ failure: StorageFailure, occurrences: Int, logger: Logger) {
        let count = LogField.count("occurrences", occurrences)
        switch failure {
        case .full: logger.warning("storage_error_full", count)
        case .busy: logger.warning("storage_error_busy", count)
        case .io: logger.warning("storage_error_io", count)
        case .shutdown: logger.warning("storage_error_shutdown", count)
        case .connection: logger.warning("storage_error_connection", count)
        case .corrupt: logger.error("storage_error_corrupt", count)
        case .readOnly: logger.error("storage_error_read_only", count)
        }
    }
}
