import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashStorage
import XCTest

/// libpq connection, parameter round trips, SQLSTATE mapping and the bounded pool.
final class PostgresConnectionTests: XCTestCase {
    /// SQLSTATEs of storage failures and the operator's kinds they map to (spec §2); no server needed.
    func testStorageFailureSQLStates() {
        XCTAssertEqual(PostgresError.kind(for: "53100"), .diskFull)
        XCTAssertEqual(PostgresError.kind(for: "53300"), .insufficientResources)
        XCTAssertEqual(PostgresError.kind(for: "25006"), .readOnlyTransaction)
        XCTAssertEqual(PostgresError.kind(for: "XX001"), .dataCorrupted)
        XCTAssertEqual(PostgresError.kind(for: "XX002"), .dataCorrupted)
        XCTAssertEqual(PostgresError.kind(for: "57P01"), .serverShutdown)
        XCTAssertEqual(PostgresError.kind(for: "57P03"), .serverShutdown)
        XCTAssertEqual(PostgresError.kind(for: "58030"), .systemError)
        // The operator's kinds (spec §2) from SQLSTATE.
        let failures: [(String, StorageFailure?)] = [
            ("53100", .full), ("25006", .readOnly), ("XX001", .corrupt), ("XX002", .corrupt), ("57P01", .shutdown),
            ("57P02", .shutdown), ("08006", .connection), ("08001", .connection), ("57014", .busy), ("40001", .busy),
            ("53300", .busy), ("58030", .io), ("23505", nil), ("42P01", nil),
        ]
        for (state, failure) in failures {
            XCTAssertEqual(PostgresStore.failure(PostgresError.kind(for: state)), failure, state)
        }
    }

    func testParametersRoundTripWithoutStringBuiltSQL() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        try db.read { c in
            try c.execute("CREATE TABLE t (i BIGINT, r DOUBLE PRECISION, s TEXT, b BYTEA, n TEXT)")
            let text = "Robert'); DROP TABLE t;-- ü 💧 \\ $1"
            let bytes: [UInt8] = [0, 1, 0x5c, 0x78, 255, 0]
            try c.update(
                "INSERT INTO t VALUES ($1, $2, $3, $4, $5)",
                [.integer(Int64.min), .real(0.1), .text(text), .blob(bytes), .null])
            try c.update("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", [.integer(Int64.max), .real(-2.5e300), .text(""), .blob([]), .null])
            let rows = try c.query("SELECT i, r, s, b, n FROM t ORDER BY i")
            XCTAssertEqual(rows.count, 2)
            XCTAssertEqual(rows[0][0], .integer(Int64.min))
            XCTAssertEqual(rows[0][1], .real(0.1))
            XCTAssertEqual(rows[0]["s"], .text(text))
            XCTAssertEqual(rows[0]["b"], .blob(bytes))
            XCTAssertEqual(rows[0]["n"], .null)
            XCTAssertEqual(rows[1][0], .integer(Int64.max))
            XCTAssertEqual(rows[1][1], .real(-2.5e300))
            XCTAssertEqual(rows[1][2], .text(""))
            XCTAssertEqual(rows[1][3], .blob([]))
            XCTAssertEqual(try c.query("SELECT count(*) FROM t WHERE s = $1", [.text(text)]).first?[0], .integer(1))
        }
    }

    func testTextWithNULIsRefusedNotTruncated() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        XCTAssertThrowsError(try db.read { try $0.query("SELECT $1::text", [.text("a\u{0}b")]) }) { error in
            XCTAssertEqual((error as? PostgresError)?.kind, .invalidParameter)
        }
        // Text parameters reach non-text types the server inferred.
        XCTAssertEqual(
            try db.read {
                try $0.query(
                    "SELECT $1::uuid::text, $2::date + 1",
                    [
                        .text("01930000-0000-7000-8000-00000000000a"), .text("2026-02-28"),
                    ]
                ).first?[0]
            }, .text("01930000-0000-7000-8000-00000000000a"))
    }

    func testSQLStateMapsToTypedErrors() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        try db.read { c in
            try c.execute("CREATE TABLE u (k TEXT PRIMARY KEY, p TEXT REFERENCES u (k))")
            try c.update("INSERT INTO u (k) VALUES ($1)", [.text("a")])
            func kind(_ body: () throws -> Void) -> PostgresError.Kind? {
                do { try body() } catch let error as PostgresError { return error.kind } catch { return nil }
                return nil
            }
            XCTAssertEqual(kind { try c.update("INSERT INTO u (k) VALUES ($1)", [.text("a")]) }, .uniqueViolation)
            XCTAssertEqual(
                kind { try c.update("INSERT INTO u (k, p) VALUES ($1, $2)", [.text("b"), .text("zz")]) },
                .foreignKeyViolation)
            XCTAssertEqual(kind { try c.update("INSERT INTO u (k) VALUES (NULL)") }, .constraintViolation)
            XCTAssertEqual(kind { try c.query("SELEC 1") }, .syntax)
            XCTAssertEqual(kind { try c.query("SELECT * FROM nowhere") }, .syntax)
        }
        XCTAssertEqual(PostgresError.kind(for: "40001"), .serializationFailure)
        XCTAssertEqual(PostgresError.kind(for: "40P01"), .deadlockDetected)
        XCTAssertEqual(PostgresError.kind(for: "08006"), .connectionFailure)
        XCTAssertFalse(PostgresError(sqlState: "23505", message: "secret value").description.contains("secret"))
    }

    func testSerializationFailureIsRetried() throws {
        let db = try PostgresTestSupport.freshDatabase()
        defer { db.close() }
        try db.read { c in
            try c.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL); INSERT INTO counter VALUES (1, 0)")
        }
        let attempts = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10 {
                do {
                    try db.transaction(isolation: .serializable, attempts: 50) { tx in
                        attempts.withLock { $0 += 1 }
                        let n = try tx.connection.query("SELECT n FROM counter WHERE id = 1").first?[0]
                        guard case .integer(let value) = n ?? .null else { return }
                        try tx.connection.update("UPDATE counter SET n = $1 WHERE id = 1", [.integer(value + 1)])
                    }
                } catch {
                    XCTFail("\(error)")
                }
            }
        }
        XCTAssertEqual(try db.read { try $0.query("SELECT n FROM counter").first?[0] }, .integer(80))
        XCTAssertGreaterThanOrEqual(attempts.current, 80)
    }

    func testPoolIsBoundedAndTimesOut() throws {
        let url = try PostgresTestSupport.url()
        let db = try PostgresDatabase(url: url, poolSize: 2, acquireTimeout: 0.3)
        defer { db.close() }
        let peak = Locked((now: 0, max: 0))
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do {
                try db.read { c in
                    peak.withLock {
                        $0.now += 1
                        $0.max = max($0.max, $0.now)
                    }
                    try c.query("SELECT pg_sleep(0.05)")
                    peak.withLock { $0.now -= 1 }
                }
            } catch let error as PostgresError where error.kind == .poolExhausted {
                // Allowed: the short acquire timeout may elapse under load.
            } catch {
                XCTFail("\(error)")
            }
        }
        XCTAssertLessThanOrEqual(peak.current.max, 2)
        XCTAssertLessThanOrEqual(db.pool.openCount, 2)
        // Both connections held: a third caller waits, then gets `.poolExhausted`.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                _ = try? db.read { _ in
                    holding.signal()
                    release.wait()
                }
            }
        }
        holding.wait()
        holding.wait()
        XCTAssertThrowsError(try db.read { _ in }) { error in
            XCTAssertEqual((error as? PostgresError)?.kind, .poolExhausted)
        }
        release.signal()
        release.signal()
    }
}
