import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The day summary on PostgreSQL: read from the per-day totals, the three newest entries and
/// the kept distinct amounts (`EntryAmounts`), it answers exactly what a recomputation from the
/// day's live entries answers, as SQLite does, after every kind of entry write; its reads use
/// their indexes; the amounts' bookkeeping costs entry writes no round trip.
final class SummaryBehaviourTests: XCTestCase {
    typealias Store = UserRepository & SessionRepository & AdminKeyRepository & WaterEntryRepository
        & WaterEntryBatchRepository & SyncRepository & HydrationRepository & AccountDataRepository

    let helper = StoreFixtures()
    let clock = ZoneClocks.shared.clock("Europe/Berlin")

    override func tearDown() {
        helper.close()
    }

    func prepare(_ store: some Store) throws {
        try helper.makeUsers(store)
        _ = try store.updateProfile(userID: helper.alice, now: helper.t0) { p in
            var p = p
            p.timezone = "Europe/Berlin"
            return p
        }
    }

    /// Runs the seeded writes on `store`; returns every summary after every write, each
    /// checked against the recomputation from the store's live entries.
    func transcript(_ store: some Store) throws -> [String] {
        try prepare(store)
        var driver = SummaryScenario(uid: helper.alice, t0: helper.t0, clock: clock, seed: 0xC0FFEE)
        let days = (-2...4).map { driver.day0.adding(days: $0) }
        var out: [String] = []
        for step in 0..<150 {
            let label = try driver.step(store)
            let live = try XCTUnwrap(try store.exportAccount(userID: helper.alice)).entries
            for date in days {
                let got = try driver.summary(store, date)
                XCTAssertEqual(got, driver.expected(live, date), "step \(step) \(label)")
                out.append(got)
            }
        }
        XCTAssertEqual(driver.counts.count, 5, "every kind of write ran: \(driver.counts)")
        return out
    }

    func testSummaryEqualsTheRecomputationAndSQLite() throws {
        let postgres = try helper.postgresStore().0
        let sqlite = try helper.sqliteStore().0
        XCTAssertEqual(try transcript(postgres), try transcript(sqlite))
    }

    /// Migration 0016 fills `entry_amounts` from the live entries written before it.
    func testMigrationBackfillsExistingEntries() throws {
        let db = try PostgresTestSupport.freshDatabase(poolSize: 1)
        helper.cleanups.append { db.close() }
        let all = try Migrator.load(directory: PostgresTestSupport.packageRoot + "/Migrations/postgres")
        try PostgresMigrator.migrate(db, all.filter { $0.version < 16 })
        let store = PostgresStore(database: db)
        try helper.makeUsers(store)
        let (uid, t0) = (helper.alice, helper.t0)
        for (i, ml) in [250, 500, 250, 300].enumerated() {
            _ = try db.read { c in
                try c.query(
                    """
                    INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, created_at, updated_at, version,
                        deleted, change_position, lww_at)
                    VALUES ($1, $2, $3, $4, 'phone', 0, 0, 1, $5, 0, 0)
                    """, [.text(uid), .text("m\(i)"), .integer(Int64(ml)), .integer(t0 + Int64(i) * 1000), .integer(i == 3 ? 1 : 0)])
            }
        }
        try PostgresMigrator.migrate(db, all)
        let rows = try db.read { c in
            try c.query("SELECT amount_ml, live_count, last_logged_at, stale, last_id FROM entry_amounts ORDER BY amount_ml")
                .map { row in (0..<4).map { String(row[$0].int64 ?? -1) } + [row[4].text ?? "-"] }
        }
        XCTAssertEqual(rows, [["250", "2", "\(t0 + 2000)", "0", "m2"], ["500", "1", "\(t0 + 1000)", "0", "m1"]])
    }

    /// With sequential scans discouraged (the test tables are tiny), the recent amounts' read
    /// and the stale rows' re-read are index searches.
    func testSummaryReadsUseTheirIndexes() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        helper.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try prepare(store)
        let plan = try db.read { c in
            try c.execute("SET enable_seqscan = off")
            defer { _ = try? c.execute("SET enable_seqscan = on") }
            let recent = try c.query(
                "EXPLAIN " + EntryAmounts.recentSQL.postgres,
                [.text(helper.alice), .integer(0), .integer(1), .integer(199), .integer(Int64.min)])
            let refresh = try c.query(
                "EXPLAIN " + EntryAmounts.refreshStaleSQL.postgres, [.text(helper.alice)])
            return (recent + refresh).map { $0[0].text ?? "" }.joined(separator: "\n")
        }
        for index in ["entry_amounts_recent", "water_entries_amounts", "water_entries_list"] {
            XCTAssertTrue(plan.contains(index), plan)
        }
        XCTAssertFalse(plan.contains("Seq Scan"), plan)
    }

    /// Entry create, edit and delete cost the round trips they cost before the amounts were
    /// kept (every amounts statement is queued with the commit): create 3 (checks; lock with
    /// the recompute's reads; commit), edit and delete 3 (lock and entry; the recompute's
    /// reads; commit), a batch of two 5 (lock; one check per item; the recompute's reads; commit).
    func testAmountsBookkeepingCostsNoRoundTrip() throws {
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        helper.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try prepare(store)
        _ = try store.updateProfile(userID: helper.alice, now: helper.t0) { p in
            var p = p
            p.reminders.enabled = false
            return p
        }
        let (uid, t0) = (helper.alice, helper.t0)
        func roundTrips(_ body: () throws -> Void) throws -> Int {
            let before = try db.read { $0.roundTrips }
            try body()
            return try db.read { $0.roundTrips } - before
        }
        @Sendable func content(_ ml: Int) -> WaterEntryContent {
            WaterEntryContent(amountMl: ml, loggedAt: t0 - 60_000, source: .phone, healthKitUUID: nil, note: nil)
        }
        func cycle(_ tag: String) throws -> [Int] {
            [
                try roundTrips { _ = try store.createEntry(userID: uid, id: "c\(tag)", content: content(250), deviceID: nil, now: t0) },
                try roundTrips {
                    let edited = content(300)
                    _ = try store.updateEntry(userID: uid, id: "c\(tag)", deviceID: nil, now: t0, precondition: { _ in true }) { _ in
                        edited
                    }
                },
                try roundTrips { try store.deleteEntry(userID: uid, id: "c\(tag)", deviceID: nil, now: t0, precondition: { _ in true }) },
                try roundTrips {
                    _ = try store.createEntries(
                        userID: uid, items: [("b1\(tag)", content(100)), ("b2\(tag)", content(200))], deviceID: nil, now: t0)
                },
            ]
        }
        _ = try cycle("warm")  // every statement prepared once
        XCTAssertEqual(try cycle("x"), [3, 3, 3, 5], "as without the amounts' bookkeeping")
    }
}
