import Foundation
import SuplashDomain
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// The domain adapter: achievements kept in the entry write's transaction, streaks across
/// DST and time-zone changes, erasure, and index use of the summary/stats/bills reads.
final class DomainStoreTests: XCTestCase {
    var db: SQLiteDatabase?

    override func tearDown() {
        db?.close()
        db = nil
    }

    func makeStore(timezone: String = "Europe/Berlin", dailyGoalMl: Int = 1000) throws -> (SQLiteStore, String) {
        let dir = TestServer.makeDataDir()
        let db = try SQLiteDatabase(path: dir + "/test.sqlite", readers: 2)
        self.db = db
        try Migrator.migrate(db, try Migrator.load(directory: TestServer.packageRoot + "/Migrations/sqlite"))
        let store = SQLiteStore(database: db)
        let now: Int64 = 1_790_000_000_000
        let user = UserProfile(id: "01930000-0000-7000-8000-000000000001", email: "a@example.test", displayName: nil, now: now)
        _ = try store.createUser(
            user, passwordHash: "x",
            session: NewSession(
                id: "s", userID: user.id, refreshTokenHash: [1],
                createdAt: now, refreshExpiresAt: now + 1))
        _ = try store.updateProfile(userID: user.id, now: now) { p in
            var p = p
            p.timezone = timezone
            p.dailyGoalMl = dailyGoalMl
            return p
        }
        return (store, user.id)
    }

    func at(_ text: String) throws -> Int64 { try XCTUnwrap(RFC3339.parse(text)) }
    func d(_ s: String) -> LocalDate { LocalDate(parsing: s) ?? LocalDate(dayNumber: 0) }

    @discardableResult
    func log(_ store: SQLiteStore, _ uid: String, _ ml: Int, _ time: String, source: EntrySource = .api) throws -> String {
        let id = UUID().uuidString.lowercased()
        _ = try store.createEntry(
            userID: uid, id: id, content: WaterEntryContent(amountMl: ml, loggedAt: try at(time), source: source),
            deviceID: nil, now: try at(time))
        return id
    }

    func testStreakAcrossTheBerlinDSTDay() throws {
        let (store, uid) = try makeStore()
        // Local noon on 28, 29 (the 23-hour day) and 30 March 2026.
        try log(store, uid, 1000, "2026-03-28T11:00:00Z")
        try log(store, uid, 1000, "2026-03-29T10:00:00Z")
        try log(store, uid, 600, "2026-03-30T10:00:00Z")
        var a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 2)
        XCTAssertEqual(a.currentStreakDays(today: d("2026-03-30")), 2)  // today still open
        XCTAssertEqual(a.currentStreakDays(today: d("2026-03-31")), 0)
        // 00:30 CEST on the 30th belongs to the 30th and completes it.
        try log(store, uid, 400, "2026-03-29T22:30:00Z", source: .watch)
        a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 3)
        XCTAssertEqual(a.daysGoalMet, 3)
        XCTAssertEqual(a.totalMl, 3000)
        XCTAssertEqual(Set(a.badges.map(\.badge)), [.firstLog, .firstGoal, .streak3, .watchFirstLog])
        let figures = try store.dayFigures(userID: uid, from: d("2026-03-28"), to: d("2026-03-30"))
        XCTAssertEqual(figures.totals[d("2026-03-30")]?.totalMl, 1000)
        XCTAssertEqual(figures.totals[d("2026-03-30")]?.entriesCount, 2)
    }

    func testDeletingLowersTheStreakButKeepsBadges() throws {
        let (store, uid) = try makeStore(timezone: "Europe/Istanbul")
        var ids: [String] = []
        for day in 1...7 {
            ids.append(try log(store, uid, 1000, "2026-06-0\(day)T09:00:00Z"))
        }
        var a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 7)
        XCTAssertTrue(a.badges.contains { $0.badge == .streak7 })
        let version = a.version
        try store.deleteEntry(userID: uid, id: ids[3], deviceID: nil, now: try at("2026-06-08T09:00:00Z"), precondition: { _ in true })
        a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 3)
        XCTAssertEqual(a.latestRunLength, 3)
        XCTAssertEqual(a.daysGoalMet, 6)
        XCTAssertEqual(a.totalMl, 6000)
        XCTAssertTrue(a.badges.contains { $0.badge == .streak7 }, "earned badges are kept")
        XCTAssertGreaterThan(a.version, version)
        // Moving an entry to the gap day restores one run of 7 days... minus the day it left.
        _ = try store.updateEntry(
            userID: uid, id: ids[6], deviceID: nil, now: try at("2026-06-08T10:00:00Z"),
            precondition: { _ in true }
        ) { c in
            var c = c
            c.loggedAt = try XCTUnwrap(RFC3339.parse("2026-06-04T09:00:00Z"))
            return c
        }
        a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 6)
        XCTAssertEqual(a.latestRunEnd, d("2026-06-06"))
    }

    func testTimezoneAndGoalChangesRebucket() throws {
        let (store, uid) = try makeStore(timezone: "Europe/Istanbul", dailyGoalMl: 500)
        // 22:30 UTC is 01:30 next day in Istanbul, 15:30 same day in Los Angeles.
        try log(store, uid, 500, "2026-06-01T22:30:00Z")
        try log(store, uid, 500, "2026-06-02T22:30:00Z")
        var f = try store.dayFigures(userID: uid, from: d("2026-06-01"), to: d("2026-06-03"))
        XCTAssertEqual(Set(f.totals.keys), [d("2026-06-02"), d("2026-06-03")])
        _ = try store.updateProfile(userID: uid, now: try at("2026-06-03T00:00:00Z")) { p in
            var p = p
            p.timezone = "America/Los_Angeles"
            return p
        }
        f = try store.dayFigures(userID: uid, from: d("2026-06-01"), to: d("2026-06-03"))
        XCTAssertEqual(Set(f.totals.keys), [d("2026-06-01"), d("2026-06-02")])
        var a = try store.achievements(userID: uid)
        XCTAssertEqual(a.latestRunEnd, d("2026-06-02"))
        XCTAssertEqual(a.longestStreakDays, 2)
        // A higher goal re-evaluates past days; badges stay.
        _ = try store.updateProfile(userID: uid, now: try at("2026-06-03T00:00:00Z")) { p in
            var p = p
            p.dailyGoalMl = 2000
            return p
        }
        a = try store.achievements(userID: uid)
        XCTAssertEqual(a.daysGoalMet, 0)
        XCTAssertEqual(a.longestStreakDays, 0)
        XCTAssertNil(a.latestRunEnd)
        XCTAssertTrue(a.badges.contains { $0.badge == .firstGoal })
    }

    func testDayContextRaisesTheGoalAndBreaksAStreak() throws {
        let (store, uid) = try makeStore(timezone: "Europe/Istanbul", dailyGoalMl: 1000)
        try log(store, uid, 1000, "2026-06-01T09:00:00Z")
        try log(store, uid, 1000, "2026-06-02T09:00:00Z")
        XCTAssertEqual(try store.achievements(userID: uid).longestStreakDays, 2)
        let (day, created) = try store.putDay(
            userID: uid, date: d("2026-06-02"),
            content: DayContextContent(maxTemperatureC: 35), deviceID: nil,
            now: try at("2026-06-02T10:00:00Z"))
        XCTAssertTrue(created)
        XCTAssertEqual(day.version, 1)
        let a = try store.achievements(userID: uid)
        XCTAssertEqual(a.longestStreakDays, 1)
        XCTAssertEqual(a.latestRunEnd, d("2026-06-01"))
        XCTAssertFalse(
            try store.putDay(
                userID: uid, date: d("2026-06-02"), content: DayContextContent(), deviceID: nil,
                now: try at("2026-06-02T11:00:00Z")
            ).created)
        XCTAssertEqual(try store.achievements(userID: uid).latestRunEnd, d("2026-06-02"))
    }

    func testEraseRemovesEverything() throws {
        let (store, uid) = try makeStore()
        try log(store, uid, 1000, "2026-03-28T11:00:00Z")
        _ = try store.createBill(
            userID: uid, id: UUID().uuidString.lowercased(),
            content: BillContent(
                provider: "ISKI", subscriberNo: "1", period: d("2026-03-01").yearMonth, consumptionMilliM3: 1, amountMinor: 1,
                dueDate: d("2026-04-01")), deviceID: nil, now: 1)
        XCTAssertTrue(try store.eraseAccount(userID: uid, now: 5))
        XCTAssertFalse(try store.eraseAccount(userID: uid, now: 6))
        XCTAssertNil(try store.user(id: uid))
        XCTAssertEqual(try store.accountsErased(since: 0), [uid])
        let leftovers = try XCTUnwrap(db).read { c in
            try ["water_entries", "days", "daily_totals", "bills", "achievements", "sessions"].map { table in
                try c.query("SELECT COUNT(*) FROM \(table)", [])[0][0]
            }
        }
        XCTAssertEqual(leftovers, Array(repeating: SQLValue.integer(0), count: 6))
    }

    func plan(_ sql: String, _ args: [SQLValue]) throws -> String {
        try XCTUnwrap(db).read { c in
            try c.query("EXPLAIN QUERY PLAN " + sql, args).map { String(describing: $0["detail"]) }.joined(separator: "\n")
        }
    }

    func testReadsUseTheirIndexes() throws {
        _ = try makeStore()
        let day = try plan(DayStatements.entriesSQL.sqlite, [.text("u"), .integer(0), .integer(1)])
        XCTAssertTrue(day.contains("water_entries_list"), day)
        XCTAssertFalse(day.contains("TEMP B-TREE"), day)
        let bills = try plan(BillStatements.list.sqlite, [.text("u"), .text("9999-99"), .text("z"), .integer(21)])
        XCTAssertTrue(bills.contains("bills_list"), bills)
        XCTAssertFalse(bills.contains("TEMP B-TREE"), bills)
        let stats = try plan(
            "SELECT local_date, total_ml FROM daily_totals WHERE user_id = ? AND local_date >= ? AND local_date <= ?",
            [.text("u"), .text("2026-01-01"), .text("2026-12-31")])
        XCTAssertFalse(stats.contains("SCAN"), stats)
    }
}
