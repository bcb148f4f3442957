import Foundation
import SuplashDomain
import SuplashPostgresStore
import SuplashSQLiteStore
import XCTest

/// Smart reminders' per-hour drinking history is kept by every entry write (create, edit,
/// delete) and rebuilt on a zone change, on PostgreSQL exactly as on SQLite: one scenario, run
/// on both, must give the same transcript (and the SQLite run alone checks the figures).
final class ReminderStorageBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & ReminderRepository

    let helper = StoreFixtures()

    override func tearDown() {
        helper.close()
    }

    func scenario(_ store: Store) throws -> [String] {
        let uid = helper.alice
        try helper.makeUsers(store)
        _ = try store.updateProfile(userID: uid, now: helper.t0) { p in
            var p = p
            p.timezone = "Europe/Berlin"
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Berlin")
        let today = clock.localDate(of: helper.t0)
        func at(_ day: Int, _ hour: Int, _ minute: Int = 0) throws -> Int64 {
            clock.instant(of: today.adding(days: day), at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        let now = try at(0, 20)
        var transcript: [String] = []
        func note(_ label: String) throws {
            guard let h = try store.hourlyDrinking(userID: uid, now: now) else { return transcript.append("\(label) none") }
            let hours = h.totalsMl.enumerated().filter { $0.element != 0 }.map { "\($0.offset):\($0.element)" }
            transcript.append("\(label) days=\(h.days) \(hours)")
        }
        var n = 0
        func log(_ ml: Int, _ loggedAt: Int64) throws {
            n += 1
            _ = try store.createEntry(
                userID: uid, id: "e\(n)", content: WaterEntryContent(amountMl: ml, loggedAt: loggedAt, source: .phone),
                deviceID: nil, now: now)
        }
        try note("empty")
        try log(300, try at(-3, 8, 10))
        try log(200, try at(-3, 8, 50))
        try log(500, try at(-2, 13, 0))
        try log(400, try at(-20, 9, 0))
        try log(250, try at(0, 7, 0))
        try note("logged")
        let moved = try at(-2, 15, 30)
        _ = try store.updateEntry(userID: uid, id: "e3", deviceID: nil, now: now, precondition: { _ in true }) { c in
            var c = c
            c.loggedAt = moved
            c.amountMl = 400
            return c
        }
        try note("edited")
        try store.deleteEntry(userID: uid, id: "e1", deviceID: nil, now: now, precondition: { _ in true })
        try note("deleted")
        _ = try store.updateProfile(userID: uid, now: now) { p in
            var p = p
            p.timezone = "Asia/Tokyo"
            return p
        }
        try note("moved east")
        transcript.append("unknown user \(String(describing: try store.hourlyDrinking(userID: "nobody", now: now)))")
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertEqual(
            sqlite,
            [
                "empty days=0 []",
                // Today's 07:00 glass is not history yet; the day −20 glass is outside the window.
                "logged days=3 [\"8:500\", \"13:500\"]",
                "edited days=3 [\"8:500\", \"15:400\"]",
                "deleted days=3 [\"8:200\", \"15:400\"]",
                // Tokyo is 7 hours ahead of Berlin's summer time: 08:50 → 15:50, 15:30 → 22:30,
                // and Berlin's 20:00 is 03:00 tomorrow there, so today's 07:00 (14:00) is history.
                "moved east days=4 [\"14:250\", \"15:200\", \"22:400\"]",
                "unknown user nil",
            ])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try helper.postgresStore().0)
        XCTAssertEqual(postgres, sqlite)
    }

    /// The profile's `reminders` round-trips through the store on both engines.
    func testReminderSettingsAreKeptWithTheProfile() throws {
        func check(_ store: Store) throws {
            try helper.makeUsers(store)
            XCTAssertEqual(try store.user(id: helper.alice)?.profile.reminders, ReminderSettings())
            let settings = ReminderSettings(
                enabled: true, mode: .fixed, intervalMinutes: 45, maxPerDay: 12, quietStart: ClockTime(hour: 22, minute: 30),
                quietEnd: ClockTime(hour: 6, minute: 0), billReminders: false)
            let updated = try store.updateProfile(userID: helper.alice, now: helper.t0 + 1) { p in
                var p = p
                p.reminders = settings
                return p
            }
            XCTAssertEqual(updated.reminders, settings)
            XCTAssertEqual(try store.user(id: helper.alice)?.profile.reminders, settings)
            XCTAssertEqual(try store.user(id: helper.bob)?.profile.reminders, ReminderSettings())
        }
        try check(try helper.sqliteStore().0)
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        try check(try helper.postgresStore().0)
    }
}
