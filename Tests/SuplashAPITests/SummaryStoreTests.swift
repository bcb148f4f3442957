import Foundation
import SuplashDomain
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The day summary read from the per-day totals, the three newest entries and the kept
/// distinct amounts (`EntryAmounts`) answers exactly what a recomputation from the day's live
/// entries answers (the summary as it read every entry of the day), after every kind of entry
/// write; and its reads are served by indexes.
final class SummaryStoreTests: XCTestCase {
    typealias Store = UserRepository & WaterEntryRepository & WaterEntryBatchRepository & SyncRepository
        & HydrationRepository & AccountDataRepository

    var db: SQLiteDatabase?
    let uid = "01930000-0000-7000-8000-000000000001"
    let t0: Int64 = 1_790_000_000_000
    let clock = ZoneClocks.shared.clock("Europe/Berlin")

    override func tearDown() {
        db?.close()
        db = nil
    }

    func makeStore() throws -> SQLiteStore {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        _ = try store.createUser(
            UserProfile(id: uid, email: "a@example.test", displayName: nil, now: t0), passwordHash: "x",
            session: NewSession(id: "s", userID: uid, refreshTokenHash: [1], createdAt: t0, refreshExpiresAt: t0 + 1))
        _ = try store.updateProfile(userID: uid, now: t0) { p in
            var p = p
            p.timezone = "Europe/Berlin"
            return p
        }
        return store
    }

    /// The scenario's view of the store (its summary and recomputation).
    var view: SummaryScenario { SummaryScenario(uid: uid, t0: t0, clock: clock, seed: 0) }

    func summary(_ store: some Store, _ date: LocalDate) throws -> String { try view.summary(store, date) }

    func expected(_ store: some Store, _ date: LocalDate) throws -> String {
        view.expected(try XCTUnwrap(try store.exportAccount(userID: uid)).entries, date)
    }

    func testSummaryEqualsTheRecomputationAcrossRandomWrites() throws {
        let store = try makeStore()
        var driver = SummaryScenario(uid: uid, t0: t0, clock: clock, seed: 0x5EED)
        let days = (-2...4).map { driver.day0.adding(days: $0) }
        for step in 0..<300 {
            let label = try driver.step(store)
            let live = try XCTUnwrap(try store.exportAccount(userID: uid)).entries
            for date in days {
                XCTAssertEqual(try summary(store, date), view.expected(live, date), "step \(step) \(label)")
            }
        }
        XCTAssertEqual(driver.counts.count, 5, "every kind of write ran: \(driver.counts)")
    }

    /// The window the summary always looked back over: an amount whose newest entry is more than
    /// `recentAmountsWindow` live entries before the day does not count, also after a delete.
    func testRecentAmountsLookBackOverTheWindowOnly() throws {
        let store = try makeStore()
        let day0 = clock.localDate(of: t0)
        let old = clock.dayRange(day0.adding(days: -3)).lowerBound
        func content(_ ml: Int, _ at: Int64) -> WaterEntryContent {
            WaterEntryContent(amountMl: ml, loggedAt: at, source: .phone, healthKitUUID: nil, note: nil)
        }
        var items = [(id: "w-500", content: content(500, old))]
        for i in 0..<DayStatements.recentAmountsWindow + 5 {
            items.append((id: "w-\(i)", content: content(250, old + 60_000 + Int64(i) * 1000)))
        }
        _ = try store.createEntries(userID: uid, items: items, deviceID: nil, now: t0)
        _ = try store.createEntry(
            userID: uid, id: "today", content: content(300, clock.dayRange(day0).lowerBound + 3_600_000), deviceID: nil, now: t0)
        XCTAssertEqual(try store.daySummary(userID: uid, date: day0, range: clock.dayRange(day0)).recentAmountsMl, [300, 250])
        XCTAssertEqual(try summary(store, day0), try expected(store, day0))
        // Six deletes bring the 500 into the window.
        for i in 0..<6 {
            try store.deleteEntry(userID: uid, id: "w-\(i + 100)", deviceID: nil, now: t0, precondition: { _ in true })
        }
        XCTAssertEqual(try store.daySummary(userID: uid, date: day0, range: clock.dayRange(day0)).recentAmountsMl, [300, 250, 500])
        for date in (-4...1).map({ day0.adding(days: $0) }) {
            XCTAssertEqual(try summary(store, date), try expected(store, date))
        }
    }

    /// Deleting or editing the newest entry of an amount gives the amount its next newest entry
    /// (the kept row turns stale and is re-read), across days.
    func testDeletingTheNewestEntryOfAnAmount() throws {
        let store = try makeStore()
        let day0 = clock.localDate(of: t0)
        let start = clock.dayRange(day0).lowerBound
        func create(_ id: String, _ ml: Int, _ minutes: Int64) throws {
            _ = try store.createEntry(
                userID: uid, id: id,
                content: WaterEntryContent(
                    amountMl: ml, loggedAt: start + minutes * 60_000, source: .phone, healthKitUUID: nil, note: nil),
                deviceID: nil, now: t0)
        }
        try create("a", 250, -600)
        try create("b", 500, -300)
        try create("c", 750, 60)
        try create("d", 250, 120)
        try create("e", 100, 180)
        func recent(_ date: LocalDate) throws -> [Int] {
            try store.daySummary(userID: uid, date: date, range: clock.dayRange(date)).recentAmountsMl
        }
        XCTAssertEqual(try recent(day0), [100, 250, 750])
        try store.deleteEntry(userID: uid, id: "e", deviceID: nil, now: t0, precondition: { _ in true })
        XCTAssertEqual(try recent(day0), [250, 750, 500])
        try store.deleteEntry(userID: uid, id: "d", deviceID: nil, now: t0, precondition: { _ in true })
        XCTAssertEqual(try recent(day0), [750, 500, 250], "250's next newest entry is the day before")
        _ = try store.updateEntry(userID: uid, id: "c", deviceID: nil, now: t0, precondition: { _ in true }) { c in
            var c = c
            c.amountMl = 500
            return c
        }
        XCTAssertEqual(try recent(day0), [500, 250])
        XCTAssertEqual(try recent(day0.adding(days: -1)), [500, 250])
        for date in (-1...1).map({ day0.adding(days: $0) }) {
            XCTAssertEqual(try summary(store, date), try expected(store, date))
        }
        let rows = try XCTUnwrap(db).read { c in
            try c.query("SELECT amount_ml, live_count FROM entry_amounts WHERE user_id = ? ORDER BY amount_ml", [.text(uid)])
                .map { "\($0[0].int64 ?? -1):\($0[1].int64 ?? -1)" }
        }
        XCTAssertEqual(rows, ["250:1", "500:2"], "amounts without live entries are dropped")
    }

    /// Entries logged at one instant are ordered by id (as the day's list is): the kept newest
    /// of each amount carries its id, so four amounts at one instant give the three with the
    /// highest ids, also after the highest is deleted, moved or given another amount.
    func testAmountsAtOneInstantAreOrderedById() throws {
        let store = try makeStore()
        let day0 = clock.localDate(of: t0)
        let at = clock.dayRange(day0).lowerBound + 3_600_000
        let items = [("b", 200), ("d", 400), ("a", 100), ("c", 300), ("e", 200)].map {
            (id: $0.0, content: WaterEntryContent(amountMl: $0.1, loggedAt: at, source: .phone, healthKitUUID: nil, note: nil))
        }
        _ = try store.createEntries(userID: uid, items: items, deviceID: nil, now: t0)
        func recent() throws -> [Int] {
            try store.daySummary(userID: uid, date: day0, range: clock.dayRange(day0)).recentAmountsMl
        }
        XCTAssertEqual(try recent(), [200, 400, 300])
        try store.deleteEntry(userID: uid, id: "e", deviceID: nil, now: t0, precondition: { _ in true })
        XCTAssertEqual(try recent(), [400, 300, 200])
        _ = try store.updateEntry(userID: uid, id: "d", deviceID: nil, now: t0, precondition: { _ in true }) { c in
            var c = c
            c.amountMl = 100
            return c
        }
        XCTAssertEqual(try recent(), [100, 300, 200])
        XCTAssertEqual(try summary(store, day0), try expected(store, day0))
    }

    /// The migration fills `entry_amounts` for entries written before it.
    func testMigrationBackfillsExistingEntries() throws {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        let all = try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite")
        try Migrator.migrate(db, all.filter { $0.version < 16 })
        let store = SQLiteStore(database: db)
        _ = try store.createUser(
            UserProfile(id: uid, email: "a@example.test", displayName: nil, now: t0), passwordHash: "x",
            session: NewSession(id: "s", userID: uid, refreshTokenHash: [1], createdAt: t0, refreshExpiresAt: t0 + 1))
        let (user, start) = (uid, t0)
        for (i, ml) in [250, 500, 250, 300].enumerated() {
            _ = try db.write { ctx in
                try ctx.connection.run(
                    """
                    INSERT INTO water_entries (user_id, id, amount_ml, logged_at, source, created_at, updated_at, version,
                        deleted, change_position, lww_at)
                    VALUES (?, ?, ?, ?, 'phone', 0, 0, 1, ?, 0, 0)
                    """, [.text(user), .text("m\(i)"), .integer(Int64(ml)), .integer(start + Int64(i) * 1000), .integer(i == 3 ? 1 : 0)])
            }
        }
        try Migrator.migrate(db, all)
        let rows = try db.read { c in
            try c.query("SELECT amount_ml, live_count, last_logged_at, stale, last_id FROM entry_amounts ORDER BY amount_ml", [])
                .map { row in (0..<4).map { String(row[$0].int64 ?? -1) } + [row[4].text ?? "-"] }
        }
        XCTAssertEqual(rows, [["250", "2", "\(t0 + 2000)", "0", "m2"], ["500", "1", "\(t0 + 1000)", "0", "m1"]])
        let day = clock.localDate(of: t0)
        XCTAssertEqual(try store.daySummary(userID: uid, date: day, range: clock.dayRange(day)).recentAmountsMl, [250, 500])
    }

    func plan(_ sql: String, _ args: [SQLValue]) throws -> String {
        try XCTUnwrap(db).read { c in
            try c.query("EXPLAIN QUERY PLAN " + sql, args).map { String(describing: $0["detail"]) }.joined(separator: "\n")
        }
    }

    /// Every summary read is an index search: the day's newest entries in the index's order, the
    /// recent amounts through `entry_amounts_recent` and one seek of `water_entries_amounts` per
    /// candidate amount, the totals by the day row's key; the stale rows' re-read of the writes
    /// too. No statement scans a table or sorts the day's entries.
    func testSummaryReadsUseTheirIndexes() throws {
        _ = try makeStore()
        let entries = try plan(DayStatements.entriesSQL.sqlite, [.text("u"), .integer(0), .integer(1)])
        XCTAssertTrue(entries.contains("water_entries_list"), entries)
        XCTAssertFalse(entries.contains("TEMP B-TREE"), entries)
        let recent = try plan(
            EntryAmounts.recentSQL.sqlite, [.text("u"), .integer(0), .integer(1), .integer(199), .integer(Int64.min)])
        XCTAssertTrue(recent.contains("entry_amounts_recent"), recent)
        XCTAssertTrue(recent.contains("water_entries_amounts"), recent)
        XCTAssertTrue(recent.contains("water_entries_list"), recent)
        // Only the three newest fresh rows (`f`) and the few candidate amounts (`c`) are walked.
        let scans = recent.split(separator: "\n").filter { $0.contains("SCAN ") }
        XCTAssertEqual(Set(scans.map { String($0) }), ["text(\"SCAN c\")", "text(\"SCAN f\")"], recent)
        XCTAssertFalse(recent.contains("CORRELATED SCALAR SUBQUERY 7"), "the look-back is read once: \(recent)")
        let totals = try plan(
            "SELECT total_ml, entries_count, goal_met FROM daily_totals WHERE user_id = ? AND local_date = ?",
            [.text("u"), .text("2026-01-01")])
        XCTAssertFalse(totals.contains("SCAN"), totals)
        let refresh = try plan(EntryAmounts.refreshStaleSQL.sqlite, [.text("u")])
        XCTAssertTrue(refresh.contains("water_entries_amounts"), refresh)
        XCTAssertFalse(refresh.contains("SCAN"), refresh)
    }
}
