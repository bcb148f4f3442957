import Foundation
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The change sequence under concurrent writers on several "instances" (separate pools):
/// committed positions have no gaps, and commit order = position order — a reader never sees
/// a position while a smaller one is still invisible.
final class ChangeSequenceTests: XCTestCase {
    func testCommitOrderIsPositionOrderAcrossInstances() throws {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        defer { setup.close() }
        try setup.read { try $0.execute("CREATE TABLE feed_probe (position BIGINT PRIMARY KEY, writer INTEGER NOT NULL)") }

        let instances = 3
        let writersPerInstance = 3
        let transactionsPerWriter = 25
        let databases = try (0..<instances).map { _ in try PostgresDatabase(url: url, poolSize: writersPerInstance) }
        defer { databases.forEach { $0.close() } }

        let done = Locked(false)
        let violations = Locked([String]())
        let observations = Locked(0)
        // The reader: every snapshot must show exactly the positions 1...n.
        let reader = Thread {
            do {
                let db = try PostgresDatabase(url: url, poolSize: 1)
                defer { db.close() }
                while !done.current {
                    let seen = try db.read { try $0.query("SELECT position FROM feed_probe ORDER BY position") }
                    for (index, row) in seen.enumerated() where row[0] != .integer(Int64(index + 1)) {
                        violations.withLock { $0.append("snapshot of \(seen.count) has \(row[0]) at \(index)") }
                        break
                    }
                    observations.withLock { $0 += 1 }
                }
            } catch {
                violations.withLock { $0.append("reader: \(error)") }
            }
        }
        reader.start()

        let committed = Locked(0)
        DispatchQueue.concurrentPerform(iterations: instances * writersPerInstance) { writer in
            let db = databases[writer % instances]
            for n in 0..<transactionsPerWriter {
                let abort = n % 7 == 3
                do {
                    try db.transaction { tx in
                        let position = try PostgresChangeSequence.of(tx).takeChangePosition()
                        // Work after taking the position widens the window a wrong
                        // technique would need to commit out of order.
                        try tx.connection.query("SELECT pg_sleep($1::float8)", [.real(Double((writer * 7 + n) % 4) / 1000)])
                        try tx.connection.update(
                            "INSERT INTO feed_probe (position, writer) VALUES ($1, $2)",
                            [.integer(position), .int(writer)])
                        if abort { throw CancellationError() }
                    }
                    committed.withLock { $0 += 1 }
                } catch is CancellationError {
                    // Rolled back on purpose: its position must be handed out again.
                } catch {
                    violations.withLock { $0.append("writer: \(error)") }
                }
            }
        }
        done.withLock { $0 = true }
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }

        XCTAssertEqual(violations.current, [])
        XCTAssertGreaterThan(observations.current, 10)
        let count = committed.current
        XCTAssertEqual(count, instances * writersPerInstance * (0..<transactionsPerWriter).filter { $0 % 7 != 3 }.count)
        let positions = try setup.read { try $0.query("SELECT position FROM feed_probe ORDER BY position") }.map { $0[0] }
        XCTAssertEqual(positions, (0..<count).map { .integer(Int64($0 + 1)) }, "no gaps")
        XCTAssertEqual(try setup.read { try $0.query("SELECT position FROM change_sequence").first?[0] }, .integer(Int64(count)))
    }

    /// Deferred positions (`changePosition(for:)`): rows are written first with the
    /// placeholder, the positions are taken and stamped at the commit. Writers on three
    /// "instances" interleave work, aborts and several rows per transaction; a resuming feed
    /// reader (cursor = the highest position it returned) must never later find a committed
    /// position at or below its cursor, no snapshot may show a hole or a placeholder, and
    /// in the end the positions are exactly 1…n.
    func testDeferredPositionsNeverLetAResumingReaderSkipARow() throws {
        let url = try PostgresTestSupport.url()
        let setup = try PostgresTestSupport.migratedDatabase()
        defer { setup.close() }
        try setup.read {
            try $0.execute("CREATE TABLE deferred_probe (id TEXT PRIMARY KEY, change_position BIGINT NOT NULL, writer INTEGER NOT NULL)")
        }

        let instances = 3
        let writersPerInstance = 3
        let transactionsPerWriter = 25
        let databases = try (0..<instances).map { _ in try PostgresDatabase(url: url, poolSize: writersPerInstance) }
        defer { databases.forEach { $0.close() } }
        let statistics = databases.map { _ in PostgresWriteStatistics() }

        let done = Locked(false)
        let violations = Locked([String]())
        let observations = Locked(0)
        let delivered = Locked(Set<Int64>())
        @Sendable func reader() {
            do {
                let db = try PostgresDatabase(url: url, poolSize: 1)
                defer { db.close() }
                var cursor: Int64 = 0
                func poll() throws {
                    // Resume after the cursor, as a sync client does.
                    let page = try db.read {
                        try $0.query(
                            "SELECT change_position FROM deferred_probe WHERE change_position > $1 ORDER BY change_position",
                            [.integer(cursor)])
                    }.compactMap { $0[0].int64 }
                    // Anything committed at or below the cursor that this reader never got was skipped.
                    let late = try db.read {
                        try $0.query("SELECT change_position FROM deferred_probe WHERE change_position <= $1", [.integer(cursor)])
                    }.compactMap { $0[0].int64 }
                    let missed = delivered.withLock { got in late.filter { !got.contains($0) } }
                    if !missed.isEmpty { violations.withLock { $0.append("skipped \(missed) below cursor \(cursor)") } }
                    // One snapshot: positions 1…n, no hole, no placeholder.
                    let all = try db.read { try $0.query("SELECT change_position FROM deferred_probe ORDER BY change_position") }
                    for (index, row) in all.enumerated() where row[0] != .integer(Int64(index + 1)) {
                        violations.withLock { $0.append("snapshot of \(all.count) has \(row[0]) at \(index)") }
                        break
                    }
                    delivered.withLock { $0.formUnion(page) }
                    cursor = max(cursor, page.last ?? cursor)
                    observations.withLock { $0 += 1 }
                }
                while !done.current { try poll() }
                try poll()
            } catch {
                violations.withLock { $0.append("reader: \(error)") }
            }
        }
        let readerThread = Thread { reader() }
        readerThread.start()

        let committed = Locked(0)
        DispatchQueue.concurrentPerform(iterations: instances * writersPerInstance) { writer in
            let db = databases[writer % instances]
            for n in 0..<transactionsPerWriter {
                let abort = n % 7 == 3
                let rows = 1 + (writer + n) % 3
                do {
                    let sequence = try db.transaction { tx in
                        let sequence = PostgresChangeSequence.of(tx)
                        for r in 0..<rows {
                            let id = "w\(writer)-\(n)-\(r)"
                            let position = try sequence.changePosition(
                                for: ChangeRow(table: "deferred_probe", keyColumns: ["id"], key: [.text(id)]))
                            XCTAssertEqual(position, -Int64(r + 1), "provisional: the (r+1)-th of the commit")
                            try tx.connection.update(
                                "INSERT INTO deferred_probe (id, change_position, writer) VALUES ($1, $2, $3)",
                                [.text(id), .integer(position), .int(writer)])
                            // Work between the writes: the window an early position would widen.
                            try tx.connection.query("SELECT pg_sleep($1::float8)", [.real(Double((writer * 7 + n) % 3) / 1000)])
                        }
                        if abort { throw CancellationError() }
                        return sequence
                    }
                    statistics[writer % instances].record(sequence)
                    committed.withLock { $0 += rows }
                } catch is CancellationError {
                    // Rolled back on purpose: its positions are handed out again.
                } catch {
                    violations.withLock { $0.append("writer: \(error)") }
                }
            }
        }
        done.withLock { $0 = true }
        while !readerThread.isFinished { Thread.sleep(forTimeInterval: 0.01) }

        XCTAssertEqual(violations.current, [])
        XCTAssertGreaterThan(observations.current, 5)
        let count = committed.current
        let positions = try setup.read { try $0.query("SELECT change_position FROM deferred_probe ORDER BY change_position") }
            .map { $0[0] }
        XCTAssertEqual(positions, (0..<count).map { .integer(Int64($0 + 1)) }, "no gaps, no placeholder")
        XCTAssertEqual(delivered.current, Set((1...Int64(count))), "the resuming reader got every position")
        XCTAssertEqual(try setup.read { try $0.query("SELECT position FROM change_sequence").first?[0] }, .integer(Int64(count)))
        // Each committed deferred transaction held the sequence for exactly one round trip
        // (the stamp statement and COMMIT, pipelined).
        for counters in statistics {
            XCTAssertEqual(counters.snapshot.maxRoundTripsHoldingChangeSequence, 1)
        }
    }

    /// `positionedWrite` runs its statement inside the commit's statement with the position
    /// (parameters renumbered); a second registration of the same row turns the first write
    /// into a queued one and stamps the row instead; with the sequence already locked the
    /// write runs at once with its position.
    func testPositionedWritesRegistrationsAndTheLockedPath() throws {
        let db = try PostgresTestSupport.migratedDatabase()
        defer { db.close() }
        try db.read { try $0.execute("CREATE TABLE write_probe (id TEXT PRIMARY KEY, change_position BIGINT NOT NULL, note TEXT NOT NULL)") }
        func row(_ id: String) -> ChangeRow { ChangeRow(table: "write_probe", keyColumns: ["id"], key: [.text(id)]) }
        func probe() throws -> [String: SQLValue] {
            var out: [String: SQLValue] = [:]
            for r in try db.read({ try $0.query("SELECT id, change_position, note FROM write_probe") }) {
                out[r[0].text ?? ""] = r[1]
                out[(r[0].text ?? "") + ".note"] = r[2]
            }
            return out
        }
        let statistics = PostgresWriteStatistics()

        let first = try db.transaction { tx -> PostgresChangeSequence in
            let sequence = PostgresChangeSequence.of(tx)
            try sequence.positionedWrite(
                of: row("a"), "INSERT INTO write_probe (id, change_position, note) VALUES ($1, $3, $2)",
                [.text("a"), .text("first")])
            try sequence.positionedWrite(
                of: row("b"), "INSERT INTO write_probe (note, id, change_position) VALUES ($1, $2, $3)",
                [.text("b-note"), .text("b")])
            // "a" again: its first write is queued with the placeholder, the second too, and "a" is stamped.
            try sequence.positionedWrite(
                of: row("a"), "UPDATE write_probe SET note = $1, change_position = $3 WHERE id = $2",
                [.text("second"), .text("a")])
            XCTAssertEqual(sequence.positions, [], "nothing taken before the commit")
            return sequence
        }
        statistics.record(first)
        // Registrations: a (consumed by the re-registration), b = 2, a = 3.
        XCTAssertEqual(first.positions, [1, 2, 3])
        XCTAssertEqual(first.committedPositions, CommittedPositions(stampBase: 0, highest: 3))
        XCTAssertEqual(try probe(), ["a": .integer(3), "a.note": .text("second"), "b": .integer(2), "b.note": .text("b-note")])
        XCTAssertEqual(try db.read { try $0.query("SELECT position FROM change_sequence").first?[0] }, .integer(3))

        // With the sequence locked first, the write takes its position at once.
        let locked = try db.transaction { tx -> PostgresChangeSequence in
            let sequence = PostgresChangeSequence.of(tx)
            try sequence.lockChangeSequence()
            try sequence.positionedWrite(
                of: row("c"), "INSERT INTO write_probe (id, change_position, note) VALUES ($1, $3, $2)",
                [.text("c"), .text("locked")])
            XCTAssertEqual(sequence.positions, [4])
            return sequence
        }
        statistics.record(locked)
        XCTAssertEqual(try probe()["c"], .integer(4))

        XCTAssertEqual(statistics.snapshot.positionedCommits, 2)
        XCTAssertGreaterThan(statistics.snapshot.maxRoundTripsHoldingChangeSequence, 1, "the locked path holds it longer")

        // A batch: more rows than the prepared shapes cover (the statement goes unnamed).
        statistics.reset()
        let batchSequence = try db.transaction { tx -> PostgresChangeSequence in
            let sequence = PostgresChangeSequence.of(tx)
            for n in 0..<9 {
                let id = "batch\(n)"
                let position = try sequence.changePosition(for: row(id))
                try tx.connection.update(
                    "INSERT INTO write_probe (id, change_position, note) VALUES ($1, $2, $3)",
                    [.text(id), .integer(position), .text("batch")])
            }
            return sequence
        }
        statistics.record(batchSequence)
        let batch = try db.read { try $0.query("SELECT change_position FROM write_probe WHERE note = 'batch' ORDER BY id") }
        XCTAssertEqual(batch.map { $0[0] }, (5...13).map { .integer(Int64($0)) })
        XCTAssertEqual(statistics.snapshot.positionedCommits, 1)
        XCTAssertEqual(statistics.snapshot.maxRoundTripsHoldingChangeSequence, 1)
    }
}
