import Foundation
import SuplashKit

/// Progress and result of an import.
public struct HealthImportReport: Sendable, Hashable {
    public var counts = HealthExportCounts()
    /// Entries the server created.
    public var uploaded = 0
    /// Entries the server already held (same dedupe key): nothing added.
    public var duplicates = 0
    /// Entries the server refused, by problem code.
    public var rejected: [String: Int] = [:]
    public var batches = 0

    public init() {}
}

/// Imports the water records of an Apple Health export into the signed-in account through
/// `entries:batch`, in gzip-compressed batches of up to 500, one batch in flight while the
/// next is parsed. Importing the same file again adds nothing (the dedupe key travels as
/// `healthKitUUID`).
///
/// ```swift
/// let report = try await HealthImporter.run(path: "export.zip", client: client) { progress in
///     progressBar.update(records: progress.counts.waterRecords, uploaded: progress.uploaded,
///                        duplicates: progress.duplicates)
/// }
/// ```
public enum HealthImporter {
    public static func run(
        path: String, client: SuplashClient, includeOwnRecords: Bool = false, batchSize: Int = 500,
        progress: @escaping @Sendable (HealthImportReport) -> Void = { _ in }
    ) async throws
        -> HealthImportReport
    {
        let size = min(max(batchSize, 1), 500)
        let reader = HealthExportReader(path: path, includeOwnRecords: includeOwnRecords)
        var report = HealthImportReport()
        var pending: [WaterEntry] = []
        var inFlight: Task<BatchOutcome, any Error>?

        func settle(_ outcome: BatchOutcome) {
            report.uploaded += outcome.created
            report.duplicates += outcome.existing
            for code in outcome.rejected.values { report.rejected[code, default: 0] += 1 }
            report.batches += 1
        }

        func send(_ batch: [WaterEntry]) async throws {
            if let previous = inFlight { settle(try await previous.value) }
            inFlight = Task { try await client.uploadBatch(batch) }
            report.counts = reader.counts
            progress(report)
        }

        do {
            try await reader.read { samples in
                pending.append(contentsOf: samples.map(\.entry))
                while pending.count >= size {
                    let batch = Array(pending.prefix(size))
                    pending.removeFirst(size)
                    try await send(batch)
                }
            }
            if !pending.isEmpty { try await send(pending) }
            if let last = inFlight { settle(try await last.value) }
        } catch {
            inFlight?.cancel()
            throw error
        }
        report.counts = reader.counts
        progress(report)
        return report
    }
}
