import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashPostgresStore
import SuplashSQL
import SuplashSQLiteStore
import SuplashStoreCore
import XCTest

/// The next hydration reminder is recomputed inside every write that changes the user's day
/// (entries from any device, day contexts, profile), on PostgreSQL exactly as on SQLite: one
/// scenario, run on both, gives the same transcript (the SQLite run alone checks the figures; outcomes sorted, as
/// reminders due at the same instant have no order).
final class ReminderPlanBehaviourTests: XCTestCase {
    typealias Store = AccountAndEntryStore & ReminderRepository & HydrationRepository

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
        func at(_ hour: Int, _ minute: Int = 0) throws -> Int64 {
            clock.instant(of: today, at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
        }
        let now = try at(9)
        var transcript: [String] = []
        var ids: [String] = []
        func note(_ label: String) throws {
            let o = try store.reminderOverview(userID: uid, limit: 50)
            let next = o.next.map { n in
                ids.append(n.id)
                let m = clock.wallMinuteOfDay(at: n.dueAt)
                return String(format: "%02d:%02d/%d id%d", m / 60, m % 60, n.suggestedAmountMl, Set(ids).count)
            }
            transcript.append("\(label): next \(next ?? "none") recent \(o.recent.map(\.outcome.rawValue).sorted())")
        }
        var n = 0
        func log(_ ml: Int, _ loggedAt: Int64, _ source: EntrySource) throws {
            n += 1
            _ = try store.createEntry(
                userID: uid, id: "e\(n)", content: WaterEntryContent(amountMl: ml, loggedAt: loggedAt, source: source),
                deviceID: nil, now: now)
        }
        func setEnabled(_ on: Bool) throws {
            _ = try store.updateProfile(userID: uid, now: now) { p in
                var p = p
                p.reminders.enabled = on
                return p
            }
        }
        try note("start")
        try log(250, try at(8), .phone)
        try note("phone 250")
        try log(500, now, .watch)
        try note("watch 500")
        try log(2000, now, .watch)
        try note("goal met")
        try store.deleteEntry(userID: uid, id: "e3", deviceID: nil, now: now, precondition: { _ in true })
        try note("deleted")
        try setEnabled(false)
        try note("disabled")
        try log(100, now, .phone)
        try note("logged while disabled")
        try setEnabled(true)
        try note("enabled")
        _ = try store.putDay(
            userID: uid, date: today, content: DayContextContent(maxTemperatureC: 34, activeMinutes: 60), deviceID: nil,
            now: now)
        try note("hot day")
        return transcript
    }

    func testSameTranscriptOnSQLiteAndPostgres() throws {
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertEqual(
            sqlite,
            [
                // The zone change at t0 (16:13 in Berlin, nothing logged) planned one at once.
                "start: next 16:13/500 id1 recent [\"pending\"]",
                // Goal 2500 ml over 07:30–22:00 (uniform curve, no history): 250 ml is behind at
                // 09:00, so the reminder is due now; 330 ml covers an even share of what is left.
                "phone 250: next 09:00/330 id1 recent [\"pending\"]",
                // A glass on the watch moves the same reminder to when 750 ml falls behind.
                "watch 500: next 11:51/330 id1 recent [\"pending\"]",
                "goal met: next none recent [\"cancelled\"]",
                "deleted: next 11:51/330 id2 recent [\"cancelled\", \"pending\"]",
                "disabled: next none recent [\"cancelled\", \"cancelled\"]",
                "logged while disabled: next none recent [\"cancelled\", \"cancelled\"]",
                "enabled: next 12:26/330 id3 recent [\"cancelled\", \"cancelled\", \"pending\"]",
                // Heat and activity raise the day's goal: the same 850 ml falls behind earlier.
                "hot day: next 11:02/500 id3 recent [\"cancelled\", \"cancelled\", \"pending\"]",
            ])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        let postgres = try scenario(try helper.postgresStore().0)
        XCTAssertEqual(postgres, sqlite)
    }

    /// A deleted or back-dated entry no longer counts as the user's latest intake write, on
    /// PostgreSQL as on SQLite: three ignored reminders double the gap; a glass logged at 15:00
    /// ends the streak; deleting it brings the streak back, and so does moving a later mug to
    /// last week (the recompute in the write's transaction must see the entry's new row,
    /// although PostgreSQL would write it with the commit).
    func testADeletedOrBackdatedGlassNoLongerEndsTheIgnoredStreak() throws {
        func scenario(_ store: Store) throws -> [String] {
            try helper.makeUsers(store)
            let uid = helper.alice
            _ = try store.updateProfile(userID: uid, now: helper.t0) { p in
                var p = p
                p.timezone = "Europe/Berlin"
                return p
            }
            let clock = ZoneClocks.shared.clock("Europe/Berlin")
            // The next day (t0 is 16:13 in Berlin).
            let day = clock.localDate(of: helper.t0).adding(days: 1)
            func at(_ hour: Int, _ minute: Int = 0) throws -> Int64 {
                clock.instant(of: day, at: try XCTUnwrap(ClockTime(hour: hour, minute: minute)))
            }
            let sql = try XCTUnwrap(store as? any SQLStore)
            // Sent and ignored at 11:00, 12:30 and 14:00 (the default 90-minute gap).
            for (n, due) in [try at(11), try at(12, 30), try at(14)].enumerated() {
                try insertSentReminder(sql, n, user: uid, dueAt: due)
            }
            var out: [String] = []
            func note(_ label: String) throws {
                let next = try XCTUnwrap(try store.reminderOverview(userID: uid, limit: 50).next)
                let m = clock.wallMinuteOfDay(at: next.dueAt)
                out.append(String(format: "%@: %02d:%02d", label, m / 60, m % 60))
            }
            _ = try store.createEntry(
                userID: uid, id: "glass", content: WaterEntryContent(amountMl: 250, loggedAt: try at(15), source: .phone),
                deviceID: nil, now: try at(15))
            try note("logged")
            try store.deleteEntry(userID: uid, id: "glass", deviceID: nil, now: try at(15, 1), precondition: { _ in true })
            try note("deleted")
            _ = try store.createEntry(
                userID: uid, id: "mug", content: WaterEntryContent(amountMl: 300, loggedAt: try at(15, 10), source: .phone),
                deviceID: nil, now: try at(15, 10))
            try note("mug")
            // Moved to last week: no longer water of the last two days.
            _ = try store.updateEntry(userID: uid, id: "mug", deviceID: nil, now: try at(15, 11), precondition: { _ in true }) { c in
                var c = c
                c.loggedAt -= 5 * 86_400_000
                return c
            }
            try note("mug moved back")
            return out
        }
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertEqual(
            sqlite,
            [
                "logged: 15:30",  // streak ended: the normal gap after 14:00
                "deleted: 17:00",  // three ignored again: the gap doubles
                "mug: 15:30",
                "mug moved back: 17:00",
            ])
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        XCTAssertEqual(try scenario(try helper.postgresStore().0), sqlite)
    }

    /// A hydration reminder of 2026-09-22 sent (and ignored) at `dueAt`.
    func insertSentReminder(_ store: some SQLStore, _ n: Int, user: String, dueAt: Int64) throws {
        _ = try store.transaction { tx in
            try tx.execute(
                SQLText(
                    """
                    INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id,
                        sent_at, created_at, updated_at)
                    VALUES (?1, ?2, 'hydration', ?3, 'ignored', 250, '2026-09-22', NULL, ?3, ?3, ?3)
                    """),
                [.text(String(format: "0193e000-0000-4000-8000-%012d", n)), .text(user), .integer(dueAt)])
        }
    }

    /// The recompute's reads are one pipeline and its write is queued with the commit: an entry
    /// create of a user with reminders costs no round trip more than one of a user without (the
    /// reads travel with the lock), an update one more — none for an entry drunk before the
    /// hourly history.
    func testRoundTripsOfAnEntryWrite() throws {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        let db = try PostgresTestSupport.migratedDatabase(poolSize: 1)
        helper.cleanups.append { db.close() }
        let store = PostgresStore(database: db)
        try helper.makeUsers(store)
        let (alice, bob, t0) = (helper.alice, helper.bob, helper.t0)
        _ = try store.updateProfile(userID: bob, now: t0) { p in
            var p = p
            p.reminders.enabled = false
            return p
        }
        func roundTrips(_ body: () throws -> Void) throws -> Int {
            let before = try db.read { $0.roundTrips }
            try body()
            return try db.read { $0.roundTrips } - before
        }
        func log(_ user: String, _ id: String) throws {
            _ = try store.createEntry(
                userID: user, id: id, content: WaterEntryContent(amountMl: 200, loggedAt: t0 - 60_000, source: .watch),
                deviceID: nil, now: t0)
        }
        // Warm-up: every statement prepared once.
        try log(alice, "w")
        try log(bob, "w")
        let without = try roundTrips { try log(bob, "x") }
        let with = try roundTrips { try log(alice, "x") }
        XCTAssertEqual(with, without, "the recompute's reads travel with the lock, its write with the commit")
        func update(_ user: String, _ id: String) throws {
            _ = try store.updateEntry(userID: user, id: id, deviceID: nil, now: t0, precondition: { _ in true }) { c in
                var c = c
                c.amountMl += 50
                return c
            }
        }
        try update(alice, "w")
        try update(bob, "w")
        let movedWithout = try roundTrips { try update(bob, "x") }
        let moved = try roundTrips { try update(alice, "x") }
        XCTAssertEqual(moved, movedWithout + 1, "an update or delete reads for the recompute in one round trip")
        // An entry drunk before the hourly history (40 days ago): editing it cannot move the plan.
        for user in [alice, bob] {
            _ = try store.createEntry(
                userID: user, id: "old",
                content: WaterEntryContent(amountMl: 200, loggedAt: t0 - 40 * 86_400_000, source: .watch), deviceID: nil, now: t0)
        }
        let oldWithout = try roundTrips { try update(bob, "old") }
        let old = try roundTrips { try update(alice, "old") }
        XCTAssertEqual(old, oldWithout, "an edit of an entry drunk before the hourly history skips the recompute")
        XCTAssertNotNil(try store.reminderOverview(userID: alice, limit: 50).next)
        // Bob's sign-up reminder was cancelled when he turned reminders off; nothing since.
        XCTAssertEqual(try store.reminderOverview(userID: bob, limit: 50).recent.map(\.outcome), [.cancelled])
        XCTAssertNil(try store.reminderOverview(userID: bob, limit: 50).next)
    }

    /// `:drink` sent at once through two store objects (two pools, as two instances) from many
    /// threads logs one entry: one call creates it, every other answers it.
    func testConcurrentDrinksOnTwoInstancesLogOnce() throws {
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set")
        }
        let (store, _) = try helper.postgresStore()
        let other = PostgresStore(database: try PostgresDatabase(url: try PostgresTestSupport.url(), poolSize: 4))
        helper.cleanups.append { other.database.close() }
        try helper.makeUsers(store)
        let reminder = try XCTUnwrap(try store.reminderOverview(userID: helper.alice, limit: 50).next)
        let (alice, t0) = (helper.alice, helper.t0)
        let outcomes = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let s: PostgresStore = i % 2 == 0 ? store : other
            let outcome: String
            do {
                switch try s.drinkReminder(
                    userID: alice, reminderID: reminder.id, amountMl: 200 + i, deviceID: nil, now: t0 + Int64(i))
                {
                case .created(let e): outcome = "created \(e.content.amountMl)"
                case .existing(let e): outcome = "existing \(e.content.amountMl)"
                }
            } catch {
                outcome = "failed \(type(of: error))"
            }
            outcomes.withLock { $0.append(outcome) }
        }
        let all = outcomes.current
        XCTAssertEqual(all.filter { $0.hasPrefix("created") }.count, 1, "\(all)")
        let amount = try XCTUnwrap(all.first { $0.hasPrefix("created") }?.split(separator: " ").last)
        XCTAssertEqual(all.filter { $0 == "existing \(amount)" }.count, 7, "\(all)")
        XCTAssertEqual(try store.listEntries(userID: helper.alice, from: nil, to: nil, after: nil, limit: 10).count, 1)
        let o = try store.reminderOverview(userID: helper.alice, limit: 50)
        XCTAssertEqual(o.recent.first { $0.id == reminder.id }?.outcome, .acted)
    }

    /// The adaptive curve follows the user's own hours (the per-hour history summed by the
    /// database): with three mornings of heavy drinking at 08:00 the same 1000 ml falls behind
    /// earlier than for a user without history — the same on both engines.
    func testHistoryShapesTheCurveOnBothEngines() throws {
        func scenario(_ store: Store) throws -> [String] {
            try helper.makeUsers(store)
            let clock = ZoneClocks.shared.clock("Europe/Berlin")
            let today = clock.localDate(of: helper.t0)
            var out: [String] = []
            for user in [helper.alice, helper.bob] {
                _ = try store.updateProfile(userID: user, now: helper.t0) { p in
                    var p = p
                    p.timezone = "Europe/Berlin"
                    return p
                }
                func at(_ day: Int, _ hour: Int) throws -> Int64 {
                    clock.instant(of: today.adding(days: day), at: try XCTUnwrap(ClockTime(hour: hour, minute: 0)))
                }
                let now = try at(0, 9)
                if user == helper.alice {
                    for day in 1...3 {
                        _ = try store.createEntry(
                            userID: user, id: "h\(day)", content: WaterEntryContent(amountMl: 2000, loggedAt: try at(-day, 8), source: .phone),
                            deviceID: nil, now: now)
                    }
                }
                _ = try store.createEntry(
                    userID: user, id: "t", content: WaterEntryContent(amountMl: 1000, loggedAt: try at(0, 8), source: .phone),
                    deviceID: nil, now: now)
                let next = try XCTUnwrap(try store.reminderOverview(userID: user, limit: 50).next)
                let m = clock.wallMinuteOfDay(at: next.dueAt)
                out.append(String(format: "%02d:%02d", m / 60, m % 60))
            }
            return out
        }
        let sqlite = try scenario(try helper.sqliteStore().0)
        XCTAssertEqual(sqlite.count, 2)
        XCTAssertLessThan(sqlite[0], sqlite[1], "\(sqlite)")
        XCTAssertEqual(sqlite[1], "13:19", "uniform: 1000 of 2500 ml over 07:30–22:00 is 13:18, rounded up past it")
        guard ProcessInfo.processInfo.environment["SUPLASH_TEST_POSTGRES_URL"] != nil else {
            throw XCTSkip("SUPLASH_TEST_POSTGRES_URL is not set: only the SQLite half ran")
        }
        XCTAssertEqual(try scenario(try helper.postgresStore().0), sqlite)
    }
}
