import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Daily totals, goals, streaks and badges are kept in the entry, day and profile write
/// transactions on PostgreSQL exactly as on SQLite: one scenario, run on both, must give
/// the same transcript (and the SQLite run alone checks a few absolute figures).
final class HydrationBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & HydrationRepository

    let helper = StoreFixtures()

    override func tearDown() {
        helper.close()
    }

    func scenario(_ store: Store) throws -> [String] {
        let uid = helper.alice
        let t0 = helper.t0
        try helper.makeUsers(store)
        _ = try store.updateProfile(userID: uid, now: t0) { p in
            var p = p
            p.timezone = "Europe/Berlin"
            p.dailyGoalMl = 1000
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let day1 = clock.localDate(of: t0)
        func at(_ day: Int, hour: Int64) -> Int64 { clock.dayRange(day1.adding(days: day)).lowerBound + hour * 3_600_000 }
        var transcript: [String] = []
        func note(_ label: String) throws {
            let a = try store.achievements(userID: uid)
            let figures = try store.dayFigures(userID: uid, from: day1.adding(days: -1), to: day1.adding(days: 5))
            let totals = figures.totals.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value.totalMl)/\($0.value.entriesCount)" }
            transcript.append(
                "\(label) run=\(a.latestRunLength)@\(a.latestRunEnd?.description ?? "-") longest=\(a.longestStreakDays) "
                    + "total=\(a.totalMl) met=\(a.daysGoalMet) v=\(a.version) "
                    + "badges=\(a.badges.map { "\($0.badge.rawValue)" }) totals=\(totals)")
        }
        var n = 0
        func log(_ day: Int, _ ml: Int, hour: Int64 = 10, source: EntrySource = .phone) throws {
            n += 1
            _ = try store.createEntry(
                userID: uid, id: "e\(n)",
                content: WaterEntryContent(
                    amountMl: ml, loggedAt: at(day, hour: hour),
                    source: source, healthKitUUID: nil, note: nil),
                deviceID: nil, now: t0 + Int64(n))
        }
        try note("empty")
        try log(0, 600)
        try note("first")
        try log(0, 500, hour: 23)
        try log(1, 1200, source: .watch)
        try log(2, 1000)
        try note("three days")
        try store.deleteEntry(userID: uid, id: "e4", deviceID: nil, now: t0 + 50, precondition: { _ in true })
        try note("day 3 lost")
        let movedTo = at(2, hour: 9)
        _ = try store.updateEntry(userID: uid, id: "e1", deviceID: nil, now: t0 + 60, precondition: { _ in true }) { c in
            var c = c
            c.loggedAt = movedTo
            return c
        }
        try note("moved")
        let put = try store.putDay(
            userID: uid, date: day1.adding(days: 1),
            content: DayContextContent(
                maxTemperatureC: 35,
                activeMinutes: 90),
            deviceID: nil, now: t0 + 70)
        transcript.append("putDay created=\(put.created) v=\(put.day.version)")
        try note("hot day")
        _ = try store.updateProfile(userID: uid, now: t0 + 80) { p in
            var p = p
            p.timezone = "America/Los_Angeles"
            return p
        }
        try note("moved west")
        let summary = try store.daySummary(userID: uid, date: day1.adding(days: 1), range: clock.dayRange(day1.adding(days: 1)))
        transcript.append(
            "summary \(summary.lastEntries.map(\.id)) total=\(summary.totalMl)/\(summary.entriesCount) recent=\(summary.recentAmountsMl) ctx=\(String(describing: summary.context))"
        )
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertTrue(sqlite[2].contains("run=3") && sqlite[2].contains("met=3"), sqlite[2])
        XCTAssertTrue(sqlite[3].contains("met=2"), sqlite[3])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try helper.postgresStore().0)
        XCTAssertEqual(postgres.count, sqlite.count)
        for (s, p) in zip(sqlite, postgres) { XCTAssertEqual(p, s) }
    }
}
