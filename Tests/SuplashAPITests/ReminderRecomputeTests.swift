import Foundation
import SuplashDomain
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage
import SuplashStoreCore
import XCTest

/// Which entry writes move the next hydration reminder (on `ReminderStoreTests`' store and user,
/// at 16:33 in Istanbul, inside the default waking window): only a new entry drunk recently
/// answers a reminder (REST or sync push); a reminder already due is not moved to the time of a
/// later write. (That an entry drunk before the hourly history skips the recompute is counted in
/// round trips by `ReminderPlanBehaviourTests.testRoundTripsOfAnEntryWrite`.)
extension ReminderStoreTests {
    var day: Int64 { 86_400_000 }

    func log(_ store: SQLiteStore, _ id: String, ml: Int, loggedAt: Int64, at time: Int64) throws {
        _ = try store.createEntry(
            userID: uid, id: id, content: WaterEntryContent(amountMl: ml, loggedAt: loggedAt), deviceID: nil, now: time)
    }

    /// The reminder the pending hydration row snoozes (`subject_id`), nil for a planned one.
    func snoozedFrom() throws -> String? {
        try XCTUnwrap(db).read { c in
            try c.queryOne(
                "SELECT subject_id FROM reminders WHERE user_id = ?1 AND kind = 'hydration' AND state = 'pending'",
                [.text(uid)])?[0].text
        }
    }

    func next(_ store: SQLiteStore) throws -> NextReminder? {
        try store.reminderOverview(userID: uid, limit: 50).next
    }

    /// A snoozed reminder is replaced only by an intake write — a new entry drunk from two days
    /// before the reminder day on, through REST or a sync push: not an entry backdated past the
    /// hourly history (40 days, which skips the recompute), not one drunk 5 days ago (the
    /// recompute runs, the history changed), not an edit of today's entry.
    func testOnlyNewRecentWaterAnswersASnooze() throws {
        let store = try makeStore()
        try log(store, "today", ml: 100, loggedAt: now - 3_600_000, at: now - 3_600_000)
        let planned = try XCTUnwrap(try next(store))
        let snoozed = try store.snoozeReminder(userID: uid, reminderID: planned.id, minutes: 30, now: now)
        XCTAssertNotEqual(snoozed.id, planned.id)
        XCTAssertEqual(try snoozedFrom(), planned.id)

        try log(store, "old", ml: 250, loggedAt: now - 40 * day, at: now + 10_000)
        try log(store, "last-week", ml: 250, loggedAt: now - 5 * day, at: now + 20_000)
        _ = try store.updateEntry(userID: uid, id: "today", deviceID: nil, now: now + 30_000, precondition: { _ in true }) {
            var c = $0
            c.amountMl = 150
            return c
        }
        let (uid, now, day) = (uid, now, day)
        let pushed = try store.applyMutations(
            userID: uid, deviceID: "watch", now: now + 40_000,
            mutations: [
                SyncMutation(
                    collection: "water_entries", id: "pushed-old",
                    write: .upsertEntry(WaterEntryContent(amountMl: 250, loggedAt: now - 30 * day, source: .watch)),
                    clientUpdatedAt: now + 40_000)
            ], profilePatch: { _, p in p })
        guard case .applied = pushed.outcomes.first else { return XCTFail("\(pushed.outcomes)") }
        XCTAssertEqual(try next(store), snoozed, "no new water drunk today or yesterday: the snooze stands")
        XCTAssertEqual(try snoozedFrom(), planned.id)

        try log(store, "recent", ml: 250, loggedAt: now - 600_000, at: now + 120_000)
        XCTAssertNil(try snoozedFrom(), "water drunk today replaces the snoozed reminder with a planned one")
    }

    /// A snooze past midnight inside a waking window that runs past it (awake until 01:00) stays
    /// on the evening's reminder day: that day's total in the alert, that day's collapse id.
    func testASnoozePastMidnightKeepsTheReminderDay() throws {
        let store = try makeStore()
        _ = try store.updateProfile(userID: uid, now: now) { p in
            var p = p
            p.timezone = "Europe/Istanbul"
            p.sleepTime = "01:00"
            return p
        }
        let clock = ZoneClocks.shared.clock("Europe/Istanbul")
        let evening = clock.localDate(of: now)
        let late = clock.instant(of: evening, at: try XCTUnwrap(ClockTime(hour: 23, minute: 45)))
        let planned = try XCTUnwrap(try next(store))
        let snoozed = try store.snoozeReminder(userID: uid, reminderID: planned.id, minutes: 30, now: late)
        XCTAssertEqual(clock.localDate(of: snoozed.dueAt), evening.adding(days: 1), "due after midnight")
        let day = try XCTUnwrap(db).read { c in
            try c.queryOne("SELECT local_date FROM reminders WHERE id = ?1", [.text(snoozed.id)])?[0].text
        }
        XCTAssertEqual(day, evening.description)
    }

    /// A reminder already due stays where it is when a later write would make it due now: the
    /// scheduler's next step sends it either way.
    func testAReminderAlreadyDueIsNotMovedToNow() throws {
        let store = try makeStore()
        let earlier = now - 600_000
        // 10 ml by 16:23: behind, so the reminder is due at once.
        try log(store, "a", ml: 10, loggedAt: earlier - 60_000, at: earlier)
        let due = try XCTUnwrap(try next(store))
        XCTAssertEqual(due.dueAt, earlier)
        try log(store, "b", ml: 10, loggedAt: now - 60_000, at: now)
        let after = try XCTUnwrap(try next(store))
        XCTAssertEqual(after.id, due.id)
        XCTAssertEqual(after.suggestedAmountMl, due.suggestedAmountMl)
        XCTAssertEqual(after.dueAt, earlier, "still due; not moved to the second write's time")
    }
}
