import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashStorage
import XCTest

/// Multi-statement snapshot reads (the sync pull, day summaries) send `BEGIN`, every read
/// and `COMMIT` in one round trip, and answer exactly as SQLite's read transaction does.
final class SnapshotPipelineTests: XCTestCase {
    typealias Store = AccountAndEntryStore & SyncRepository & HydrationRepository

    let fixtures = StoreFixtures()

    override func tearDown() {
        fixtures.close()
    }

    /// A store on a one-connection pool, so the connection's round-trip counter sees every call.
    func postgresStore() throws -> PostgresStore {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        fixtures.cleanups.append { db.close() }
        return PostgresStore(database: db)
    }

    /// Round trips `body` makes on the pool's only connection.
    func roundTrips(_ store: PostgresStore, _ body: () throws -> Void) throws -> Int {
        let before = try store.database.read { $0.roundTrips }
        try body()
        return try store.database.read { $0.roundTrips } - before
    }

    let date = LocalDate(parsing: "2026-09-21") ?? LocalDate(dayNumber: 0)

    /// Users, entries (one deleted: a tombstone), a day context: a feed with every kind of row.
    func populate(_ store: Store) throws {
        try fixtures.makeUsers(store)
        let uid = fixtures.alice
        let t0 = fixtures.t0
        for (index, ml) in [250, 300, 250, 500].enumerated() {
            let content = WaterEntryContent(
                amountMl: ml, loggedAt: t0 + Int64(index) * 60_000, source: .phone,
                healthKitUUID: nil, note: nil)
            _ = try store.createEntry(
                userID: uid, id: "0193000\(index)-0000-7000-8000-000000000001", content: content,
                deviceID: "phone", now: t0 + Int64(index))
        }
        try store.deleteEntry(
            userID: uid, id: "01930001-0000-7000-8000-000000000001", deviceID: nil, now: t0 + 10,
            precondition: { _ in true })
        _ = try store.putDay(
            userID: uid, date: date, content: DayContextContent(maxTemperatureC: 31.5, activeMinutes: 40),
            deviceID: "watch", now: t0 + 20)
    }

    func pages(_ store: Store) throws -> [String] {
        var out: [String] = []
        for (after, limit, tombstones) in [(Int64(0), 50, true), (0, 50, false), (0, 2, true), (3, 2, true), (100, 50, true)] {
            let p = try store.changes(userID: fixtures.alice, after: after, limit: limit, includeTombstones: tombstones)
            out.append(
                "\(p.changes) more=\(p.hasMore) head=\(p.headPosition) horizon=\(p.purgeHorizon) "
                    + "profile=\(String(describing: p.profile)) id=\(!p.databaseID.isEmpty)")
        }
        let unknown = try store.changes(
            userID: "01930000-0000-7000-8000-0000000000ff", after: 0, limit: 10,
            includeTombstones: true)
        out.append("unknown: \(unknown.changes.count) profile=\(String(describing: unknown.profile))")
        return out
    }

    func days(_ store: Store) throws -> [String] {
        let range = fixtures.t0 - 3_600_000..<fixtures.t0 + 3_600_000
        let summary = try store.daySummary(userID: fixtures.alice, date: date, range: range)
        let figures = try store.dayFigures(userID: fixtures.alice, from: date.adding(days: -1), to: date.adding(days: 1))
        return [
            "\(summary.lastEntries) \(summary.totalMl)/\(summary.entriesCount)", "\(summary.recentAmountsMl)",
            "\(String(describing: summary.context))",
            "\(summary.achievements)", "\(figures.totals.sorted { $0.key < $1.key })",
            "\(figures.contexts.sorted { $0.key < $1.key })",
        ]
    }

    func testPullIsOneRoundTripAndAnswersAsSQLite() throws {
        let sqlite = try fixtures.sqliteStore().0
        try populate(sqlite)
        let expected = try pages(sqlite)
        XCTAssertTrue(expected[0].contains("deleted: true"), "\(expected[0])")
        let store = try postgresStore()
        try populate(store)
        _ = try pages(store)  // prepares the statements (once per connection)
        var got: [String] = []
        let trips = try roundTrips(store) { got = try pages(store) }
        XCTAssertEqual(got, expected)
        // Six pulls: BEGIN + nine reads + COMMIT in one pipeline each (ten round trips before).
        XCTAssertEqual(trips, 6)
        XCTAssertEqual(try store.database.read { $0.isInTransaction }, false)
    }

    func testDayReadsAreOneRoundTripAndAnswerAsSQLite() throws {
        let sqlite = try fixtures.sqliteStore().0
        try populate(sqlite)
        let expected = try days(sqlite)
        let store = try postgresStore()
        try populate(store)
        _ = try days(store)
        var got: [String] = []
        let trips = try roundTrips(store) { got = try days(store) }
        XCTAssertEqual(got, expected)
        XCTAssertEqual(trips, 2, "daySummary and dayFigures: one round trip each")
    }

    func testPipelinedReadsShareOneReadOnlySnapshotTransaction() throws {
        let store = try postgresStore()
        let db = store.database
        let rows = try db.transaction(isolation: .repeatableRead, readOnly: true) { tx in
            try tx.pipelineAndCommit([
                PostgresStatement("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'), now()::text"),
                PostgresStatement("SELECT now()::text, pg_current_snapshot()::text"),
                PostgresStatement("SELECT pg_current_snapshot()::text"),
            ])
        }
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[0].first?[0].text, "repeatable read")
        XCTAssertEqual(rows[0].first?[1].text, "on")
        XCTAssertEqual(rows[0].first?[2].text, rows[1].first?[0].text, "one transaction")
        XCTAssertEqual(rows[1].first?[1].text, rows[2].first?[0].text, "one snapshot")
        XCTAssertEqual(try db.read { $0.isInTransaction }, false, "committed")
    }

    func testFailureInThePipelineRollsBackAndLeavesTheConnectionUsable() throws {
        let store = try postgresStore()
        let db = store.database
        XCTAssertThrowsError(
            try db.transaction(isolation: .repeatableRead, readOnly: true) { tx in
                try tx.pipelineAndCommit([PostgresStatement("SELECT 1"), PostgresStatement("SELECT 1 / (0 * $1::int)", [.integer(1)])])
            })
        XCTAssertEqual(try db.read { $0.isInTransaction }, false)
        XCTAssertEqual(try db.read { try $0.query("SELECT 2").first?[0].int64 }, 2)
        XCTAssertEqual(try store.changes(userID: fixtures.alice, after: 0, limit: 5, includeTombstones: true).changes, [])
    }
}
