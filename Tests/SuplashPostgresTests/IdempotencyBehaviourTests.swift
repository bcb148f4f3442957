import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Idempotency-Key records behave alike on both stores, and on PostgreSQL a record saved by
/// one instance is replayed by another.
final class IdempotencyBehaviourTests: XCTestCase {
    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    func check(_ store: IdempotencyRepository, replica: IdempotencyRepository) throws {
        let t0 = fixtures.t0
        let record = IdempotencyRecord(
            fingerprint: [1, 2, 0, 255], status: 201,
            headers: [["Content-Type", "application/json"], ["ETag", "\"1\""]],
            body: Array("{\"id\":\"e1\"}".utf8), expiresAt: t0 + 1_000)
        XCTAssertNil(try store.idempotencyRecord(caller: "u:a", key: "k1", now: t0))
        try store.saveIdempotencyRecord(caller: "u:a", key: "k1", record: record, now: t0)
        let replayed = try XCTUnwrap(try replica.idempotencyRecord(caller: "u:a", key: "k1", now: t0 + 1))
        XCTAssertEqual(replayed.fingerprint, record.fingerprint)
        XCTAssertEqual(replayed.status, 201)
        XCTAssertEqual(replayed.headers, record.headers)
        XCTAssertEqual(replayed.body, record.body)
        XCTAssertEqual(replayed.expiresAt, t0 + 1_000)
        XCTAssertNil(try replica.idempotencyRecord(caller: "u:b", key: "k1", now: t0 + 1), "per caller")
        XCTAssertNil(try replica.idempotencyRecord(caller: "u:a", key: "k1", now: t0 + 1_000), "expired")
        var replaced = record
        replaced.status = 200
        replaced.expiresAt = t0 + 5_000
        try replica.saveIdempotencyRecord(caller: "u:a", key: "k1", record: replaced, now: t0 + 2)
        XCTAssertEqual(try store.idempotencyRecord(caller: "u:a", key: "k1", now: t0 + 3)?.status, 200)
        try store.saveIdempotencyRecord(caller: "u:a", key: "k2", record: record, now: t0)
        XCTAssertEqual(try store.purgeIdempotencyRecords(now: t0 + 1_000), 1)
        XCTAssertEqual(try store.purgeIdempotencyRecords(now: t0 + 1_000), 0)
        XCTAssertNotNil(try store.idempotencyRecord(caller: "u:a", key: "k1", now: t0 + 1_000))
    }

    func testOnSQLite() throws {
        let store = try fixtures.sqliteStore().0
        try check(store, replica: store)
    }

    func testOnPostgresAcrossInstances() throws {
        let store = try fixtures.postgresStore().0
        let other = PostgresStore(database: try PostgresDatabase(url: try PostgresTestSupport.url(), poolSize: 2))
        defer { other.database.close() }
        try check(store, replica: other)
    }
}
