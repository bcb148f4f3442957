import SuplashDomain
import XCTest

/// Bill-due reminders and campaign segments (issue "smart reminders", spec §8, §9).
final class BillReminderAndSegmentTests: XCTestCase {
    private let bill = BillContent(
        provider: "ISKI", subscriberNo: "1234567", period: YearMonth(parsing: "2026-11")!,
        consumptionMilliM3: 12_500, amountMinor: 45_678, dueDate: day("2026-12-10"))

    private func next(
        _ content: BillContent? = nil, deleted: Bool = false, settings: ReminderSettings = ReminderSettings(),
        sent: [String] = [], offsets: [Int] = BillReminderSchedule.defaultOffsetsDays, now: String,
        zoneID: String = "Europe/Istanbul"
    ) throws -> PlannedBillReminder? {
        BillReminderSchedule.next(
            billID: "b1", bill: content ?? bill, deleted: deleted,
            hours: BillAlertHours(settings: settings, wake: nil, sleep: nil, clock: try zone(zoneID)), sentAt: sent.map { at($0) },
            offsetsDays: offsets, now: at(now))
    }

    // MARK: Bill reminders

    func testThreeDaysOneDayAndTheDueDayAtTenLocal() throws {
        let first = try XCTUnwrap(try next(now: "2026-12-01T12:00:00+03:00"))
        XCTAssertEqual(
            first,
            PlannedBillReminder(
                billID: "b1", dueAt: at("2026-12-07T10:00:00+03:00"),
                localDate: day("2026-12-07"), daysBeforeDue: 3))
        let second = try next(sent: ["2026-12-07T10:00:02+03:00"], now: "2026-12-07T10:00:02+03:00")
        XCTAssertEqual(second?.dueAt, at("2026-12-09T10:00:00+03:00"))
        XCTAssertEqual(second?.daysBeforeDue, 1)
        let dueDay = try next(sent: ["2026-12-07T10:00:02+03:00", "2026-12-09T10:00:01+03:00"], now: "2026-12-09T10:00:01+03:00")
        XCTAssertEqual(dueDay?.dueAt, at("2026-12-10T10:00:00+03:00"))
        XCTAssertEqual(dueDay?.daysBeforeDue, 0)
        // After the due day's reminder: nothing more, also while overdue.
        XCTAssertNil(try next(now: "2026-12-10T10:00:01+03:00"))
        XCTAssertNil(try next(now: "2026-12-15T09:00:00+03:00"))
        // In Berlin the same bill is reminded at 10:00 Berlin time.
        XCTAssertEqual(try next(now: "2026-12-01T12:00:00Z", zoneID: "Europe/Berlin")?.dueAt, at("2026-12-07T09:00:00Z"))
    }

    func testNoneWhenPaidDeletedOrSwitchedOff() throws {
        var paid = bill
        paid.paidAt = at("2026-12-08T08:00:00Z")
        XCTAssertNil(try next(paid, now: "2026-12-08T12:00:00+03:00"))
        XCTAssertNil(try next(deleted: true, now: "2026-12-01T12:00:00+03:00"))
        XCTAssertNil(try next(settings: ReminderSettings(billReminders: false), now: "2026-12-01T12:00:00+03:00"))
        XCTAssertNil(try next(settings: ReminderSettings(enabled: false), now: "2026-12-01T12:00:00+03:00"))
        // Paid and then marked unpaid again: reminders resume.
        paid.paidAt = nil
        XCTAssertEqual(try next(paid, now: "2026-12-08T12:00:00+03:00")?.dueAt, at("2026-12-09T10:00:00+03:00"))
    }

    func testRescheduledWhenTheDueDateMoves() throws {
        let sent = ["2026-12-07T10:00:00+03:00"]
        var moved = bill
        moved.dueDate = day("2026-12-08")  // one day before is the 7th, already reminded today
        XCTAssertEqual(try next(moved, sent: sent, now: "2026-12-07T12:00:00+03:00")?.dueAt, at("2026-12-08T10:00:00+03:00"))
        moved.dueDate = day("2026-12-20")
        let later = try next(moved, sent: sent, now: "2026-12-07T12:00:00+03:00")
        XCTAssertEqual(later?.dueAt, at("2026-12-17T10:00:00+03:00"))
        XCTAssertEqual(later?.daysBeforeDue, 3)
    }

    func testAtMostOnePerBillPerDay() throws {
        // Reminded at 10:00; at 10:30 quiet hours 09:00–12:00 are set, which would put today's at 12:00.
        let quiet = ReminderSettings(quietStart: clockTime("09:00"), quietEnd: clockTime("12:00"))
        let n = try next(settings: quiet, sent: ["2026-12-07T10:00:00+03:00"], now: "2026-12-07T10:30:00+03:00")
        XCTAssertEqual(n?.dueAt, at("2026-12-09T12:00:00+03:00"))
        XCTAssertEqual(n?.localDate, day("2026-12-09"))
    }

    func testQuietHoursMoveTheSendTimeToTheirEnd() throws {
        let cases: [(String, String, String?)] = [
            ("08:00", "11:30", "2026-12-07T11:30:00+03:00"),  // 10:00 is quiet: at its end
            ("22:00", "10:30", "2026-12-07T10:30:00+03:00"),  // across midnight
            ("09:00", "10:00", "2026-12-07T10:00:00+03:00"),  // ends exactly at 10:00: not quiet
            ("11:00", "12:00", "2026-12-07T10:00:00+03:00"),  // later: no effect
            ("10:00", "09:00", nil),  // quiet until 09:00 the next day: every day dropped
        ]
        for (start, end, expected) in cases {
            let s = ReminderSettings(quietStart: clockTime(start), quietEnd: clockTime(end))
            XCTAssertEqual(
                try next(settings: s, now: "2026-12-01T12:00:00+03:00")?.dueAt, expected.map { at($0) },
                "quiet \(start)–\(end)")
        }
    }

    func testOffsetsAreConfigurable() throws {
        let n = try next(offsets: [7, 2, 2, -1], now: "2026-12-01T12:00:00+03:00")
        XCTAssertEqual(n?.dueAt, at("2026-12-03T10:00:00+03:00"))
        XCTAssertEqual(n?.daysBeforeDue, 7)
        XCTAssertEqual(try next(sent: ["2026-12-03T10:00:00+03:00"], offsets: [7, 2], now: "2026-12-03T10:00:01+03:00")?.daysBeforeDue, 2)
        XCTAssertEqual(try next(offsets: [], now: "2026-12-01T12:00:00+03:00")?.daysBeforeDue, 0)
    }

    private func hours(
        quiet: (String, String)? = nil, wake: String? = "07:00", sleep: String? = "23:00", zoneID: String = "Europe/Istanbul"
    ) throws -> BillAlertHours {
        BillAlertHours(
            settings: ReminderSettings(quietStart: quiet.map { clockTime($0.0) }, quietEnd: quiet.map { clockTime($0.1) }),
            wake: wake.map { clockTime($0) }, sleep: sleep.map { clockTime($0) }, clock: try zone(zoneID))
    }

    /// The scheduler sends a due bill alert only on its day, outside quiet hours, while the user
    /// is awake: found late (every instance down at 10:00) or after waiting behind another alert,
    /// it goes at the first slot left on its day — so "due in 3 days" stays true and nobody is
    /// woken; with none left, nil (the next reminder day).
    func testABillAlertGoesOnlyAtASlotOnItsDay() throws {
        func send(_ now: String, _ h: BillAlertHours) -> Int64? {
            BillReminderSchedule.dispatchInstant(day: day("2026-12-07"), hours: h, now: at(now))
        }
        let plain = try hours()
        XCTAssertEqual(send("2026-12-07T10:00:01+03:00", plain), at("2026-12-07T10:00:01+03:00"))
        XCTAssertEqual(send("2026-12-07T16:00:00+03:00", plain), at("2026-12-07T16:00:00+03:00"))  // late, the same day, awake
        XCTAssertEqual(send("2026-12-07T22:59:00+03:00", plain), at("2026-12-07T22:59:00+03:00"))
        XCTAssertNil(send("2026-12-07T23:00:00+03:00", plain))  // bedtime: no slot left that day
        XCTAssertNil(send("2026-12-08T00:15:00+03:00", plain))  // another day: "due in 3 days" would be wrong
        // Quiet 12:00–14:00 and found at 12:30: at 14:00 the same day (not lost to the next day).
        let lunch = try hours(quiet: ("12:00", "14:00"))
        XCTAssertEqual(send("2026-12-07T12:30:00+03:00", lunch), at("2026-12-07T14:00:00+03:00"))
        let evening = try hours(quiet: ("22:00", "07:00"))
        XCTAssertEqual(send("2026-12-07T21:00:00+03:00", evening), at("2026-12-07T21:00:00+03:00"))
        XCTAssertNil(send("2026-12-07T22:30:00+03:00", evening))
        // Awake 20:00–08:00: at 14:00, asleep, at 20:00 that day; at 05:00 still awake from the
        // evening before.
        let nightShift = try hours(wake: "20:00", sleep: "08:00")
        XCTAssertEqual(send("2026-12-07T14:00:00+03:00", nightShift), at("2026-12-07T20:00:00+03:00"))
        XCTAssertEqual(send("2026-12-07T05:00:00+03:00", nightShift), at("2026-12-07T05:00:00+03:00"))
        // Without an awake period only the day and the quiet hours count.
        XCTAssertEqual(send("2026-12-07T23:30:00+03:00", try hours(wake: nil)), at("2026-12-07T23:30:00+03:00"))
        // Quiet from 09:00 to 23:55 and asleep from 23:00: nothing left after 09:00.
        XCTAssertNil(send("2026-12-07T09:30:00+03:00", try hours(quiet: ("09:00", "23:55"))))
    }

    /// The planned instant is a slot too: a night-shift user's reminder is at 20:00, not at 10:00
    /// while asleep; a late riser's at their wake time.
    func testThePlannedInstantIsTheFirstSlotFromTenOClock() throws {
        func planned(_ h: BillAlertHours) -> Int64? {
            BillReminderSchedule.next(billID: "b1", bill: bill, deleted: false, hours: h, sentAt: [], now: at("2026-12-01T12:00:00+03:00"))?
                .dueAt
        }
        XCTAssertEqual(planned(try hours()), at("2026-12-07T10:00:00+03:00"))
        XCTAssertEqual(planned(try hours(wake: "20:00", sleep: "08:00")), at("2026-12-07T20:00:00+03:00"))
        XCTAssertEqual(planned(try hours(wake: "11:15", sleep: "23:00")), at("2026-12-07T11:15:00+03:00"))
    }

    /// A write that recomputes the bill's plan leaves a reminder whose day's time has come on its
    /// day: due (or waiting behind another alert, or late) it stays as stored; stored later (the
    /// zone or the quiet hours changed) it moves to the day's first slot left.
    func testAReminderUnderWayKeepsItsDay() throws {
        func underWay(
            stored: String, now: String, bill b: BillContent? = nil, _ h: BillAlertHours? = nil, d: String = "2026-12-07"
        ) throws -> Int64? {
            BillReminderSchedule.underWayInstant(
                day: day(d), storedDueAt: at(stored), bill: b ?? bill, hours: try h ?? hours(), waitMs: 300_000, now: at(now))
        }
        let ten = "2026-12-07T10:00:00+03:00"
        XCTAssertNil(try underWay(stored: ten, now: "2026-12-07T09:59:00+03:00"))  // not yet: `next` plans it
        XCTAssertEqual(try underWay(stored: ten, now: "2026-12-07T10:00:30+03:00"), at(ten))
        XCTAssertEqual(
            try underWay(stored: "2026-12-07T10:10:00+03:00", now: "2026-12-07T10:06:00+03:00"), at("2026-12-07T10:10:00+03:00"))  // waiting
        XCTAssertEqual(try underWay(stored: ten, now: "2026-12-08T09:00:00+03:00"), at(ten))  // late: the scheduler decides
        XCTAssertNil(try underWay(stored: "2026-12-08T10:00:00+03:00", now: "2026-12-08T12:00:00+03:00", d: "2026-12-08"))  // not a reminder day
        var moved = bill
        moved.dueDate = day("2026-12-20")
        XCTAssertNil(try underWay(stored: ten, now: "2026-12-07T10:05:00+03:00", bill: moved))  // no longer one
        // Stored at 18:00 (another zone's 10:00), its day's 10:00 passed here: at once, not at 18:00.
        XCTAssertEqual(
            try underWay(stored: "2026-12-07T18:00:00+03:00", now: "2026-12-07T12:00:00+03:00"), at("2026-12-07T12:00:00+03:00"))
        // Quiet hours changed to 10:45–13:00 while it was stored at 11:00: at once before them, at
        // their end inside them.
        let quiet = try hours(quiet: ("10:45", "13:00"))
        XCTAssertEqual(
            try underWay(stored: "2026-12-07T11:00:00+03:00", now: "2026-12-07T10:30:00+03:00", quiet), at("2026-12-07T10:30:00+03:00"))
        XCTAssertEqual(
            try underWay(stored: "2026-12-07T11:00:00+03:00", now: "2026-12-07T10:50:00+03:00", quiet), at("2026-12-07T13:00:00+03:00"))
        // Stored later, and no slot left on its day: nil (`next` plans the next reminder day).
        XCTAssertNil(try underWay(stored: "2026-12-08T02:00:00+03:00", now: "2026-12-07T23:30:00+03:00"))
    }

    // MARK: Campaign segments

    func testSegmentsOfAnOrdinaryDay() throws {
        let ist = try zone("Europe/Istanbul")
        func seg(_ s: CampaignSegment) -> Range<Int64> {
            CampaignSchedule.segment(s, day: day("2026-06-01"), wake: clockTime("07:00"), sleep: clockTime("23:00"), clock: ist)
        }
        XCTAssertEqual(seg(.morning), at("2026-06-01T07:00:00+03:00")..<at("2026-06-01T11:00:00+03:00"))
        XCTAssertEqual(seg(.noon), at("2026-06-01T13:00:00+03:00")..<at("2026-06-01T17:00:00+03:00"))
        XCTAssertEqual(seg(.evening), at("2026-06-01T19:00:00+03:00")..<at("2026-06-01T23:00:00+03:00"))
        XCTAssertEqual(seg(.all), at("2026-06-01T07:00:00+03:00")..<at("2026-06-01T23:00:00+03:00"))
        // An awake period shorter than 4 h is the whole of each segment.
        let short = CampaignSchedule.segment(
            .noon, day: day("2026-06-01"), wake: clockTime("07:00"),
            sleep: clockTime("10:00"), clock: ist)
        XCTAssertEqual(short, at("2026-06-01T07:00:00+03:00")..<at("2026-06-01T10:00:00+03:00"))
    }

    func testSendInstantIsTheSegmentStartInTheUsersZone() throws {
        let ist = try zone("Europe/Istanbul")
        let ny = try zone("America/New_York")
        func send(_ s: CampaignSegment, _ now: String, clock: ZoneClock, wake: String = "07:00", sleep: String = "23:00") -> Int64 {
            CampaignSchedule.sendInstant(
                segment: s, sendAt: nil, wake: clockTime(wake), sleep: clockTime(sleep),
                clock: clock, now: at(now))
        }
        XCTAssertEqual(send(.morning, "2026-06-01T05:00:00+03:00", clock: ist), at("2026-06-01T07:00:00+03:00"))
        XCTAssertEqual(send(.morning, "2026-06-01T08:00:00+03:00", clock: ist), at("2026-06-01T08:00:00+03:00"))  // under way
        XCTAssertEqual(send(.morning, "2026-06-01T12:00:00+03:00", clock: ist), at("2026-06-02T07:00:00+03:00"))
        XCTAssertEqual(send(.evening, "2026-06-01T12:00:00+03:00", clock: ist), at("2026-06-01T19:00:00+03:00"))
        // The same campaign instant reaches a New York user at their own 19:00.
        XCTAssertEqual(send(.evening, "2026-06-01T12:00:00+03:00", clock: ny), at("2026-06-01T19:00:00-04:00"))
        // A night-shift user, awake 18:00–06:00: the evening segment (02:00–06:00) is on the next calendar day
        // but belongs to the day the awake period started on.
        XCTAssertEqual(
            send(.evening, "2026-06-02T01:00:00+03:00", clock: ist, wake: "18:00", sleep: "06:00"),
            at("2026-06-02T02:00:00+03:00"))
        XCTAssertEqual(
            send(.morning, "2026-06-02T01:00:00+03:00", clock: ist, wake: "18:00", sleep: "06:00"),
            at("2026-06-02T18:00:00+03:00"))
        XCTAssertEqual(
            send(.noon, "2026-06-01T19:00:00+03:00", clock: ist, wake: "18:00", sleep: "06:00"),
            at("2026-06-01T22:00:00+03:00"))
        // Wake time in the spring gap: the morning starts at the next valid minute.
        XCTAssertEqual(send(.morning, "2026-03-08T05:00:00Z", clock: ny, wake: "02:30"), at("2026-03-08T07:00:00Z"))
    }

    func testSendAtKeepsItsWallTimeInEveryZone() throws {
        let wall = try XCTUnwrap(CampaignSchedule.wallTime(ofRFC3339: "2026-12-02T09:00:00+03:00"))
        XCTAssertEqual(wall.date, day("2026-12-02"))
        XCTAssertEqual(wall.time, clockTime("09:00"))
        XCTAssertNil(CampaignSchedule.wallTime(ofRFC3339: "2026-12-02 09:00"))
        func send(_ clock: ZoneClock, now: String) -> Int64 {
            CampaignSchedule.sendInstant(
                segment: .evening, sendAt: wall, wake: clockTime("07:00"), sleep: clockTime("23:00"),
                clock: clock, now: at(now))
        }
        XCTAssertEqual(send(try zone("Europe/Berlin"), now: "2026-12-01T12:00:00Z"), at("2026-12-02T08:00:00Z"))
        XCTAssertEqual(send(try zone("America/New_York"), now: "2026-12-01T12:00:00Z"), at("2026-12-02T14:00:00Z"))
        // Already past in the user's zone: at once.
        XCTAssertEqual(send(try zone("Asia/Tokyo"), now: "2026-12-02T01:00:00Z"), at("2026-12-02T01:00:00Z"))
        // A wall time in a gap moves to the next valid minute.
        let gap = try XCTUnwrap(CampaignSchedule.wallTime(ofRFC3339: "2026-03-08T02:30:00Z"))
        XCTAssertEqual(
            CampaignSchedule.sendInstant(
                segment: .all, sendAt: gap, wake: clockTime("07:00"), sleep: clockTime("23:00"),
                clock: try zone("America/New_York"), now: at("2026-03-01T00:00:00Z")),
            at("2026-03-08T07:00:00Z"))
        XCTAssertTrue(CampaignSchedule.reaches(ReminderSettings()))
    }

    /// A late campaign alert goes while its segment (with `sendAt`, the awake period) is under
    /// way; a morning greeting is not sent in the evening, nor anything at night.
    func testALateCampaignAlertGoesOnlyWithinItsSegmentAndOutsideQuietHours() throws {
        let ist = try zone("Europe/Istanbul")
        func send(
            _ segment: CampaignSegment, hasSendAt: Bool = false, due: String, now: String, wake: String = "07:00",
            sleep: String = "23:00", quiet: (String, String)? = nil
        ) -> Int64? {
            CampaignSchedule.dispatchInstant(
                segment: segment, hasSendAt: hasSendAt, dueAt: at(due), wake: clockTime(wake), sleep: clockTime(sleep),
                quiet: quiet.flatMap { QuietHours(start: clockTime($0.0), end: clockTime($0.1)) }, clock: ist,
                lifetimeMs: 1_800_000, now: at(now))
        }
        func may(_ segment: CampaignSegment, hasSendAt: Bool = false, due: String, now: String, wake: String = "07:00", sleep: String = "23:00")
            -> Bool
        {
            send(segment, hasSendAt: hasSendAt, due: due, now: now, wake: wake, sleep: sleep) == at(now)
        }
        XCTAssertTrue(may(.morning, due: "2026-06-01T07:00:00+03:00", now: "2026-06-01T10:59:00+03:00"))
        XCTAssertFalse(may(.morning, due: "2026-06-01T07:00:00+03:00", now: "2026-06-01T11:00:00+03:00"))
        XCTAssertFalse(may(.morning, due: "2026-06-01T07:00:00+03:00", now: "2026-06-02T08:00:00+03:00"))  // the next morning
        // Due late in the segment and found after its end: not sent (the segment is the limit).
        XCTAssertFalse(may(.morning, due: "2026-06-01T10:50:00+03:00", now: "2026-06-01T11:15:00+03:00"))
        // Moved past the segment's end by a wait behind another alert (due 11:03): its lifetime.
        XCTAssertTrue(may(.morning, due: "2026-06-01T11:03:00+03:00", now: "2026-06-01T11:03:01+03:00"))
        // Quiet hours never move it past its segment (nor the user's bedtime at its end).
        XCTAssertNil(
            send(.evening, due: "2026-06-01T22:50:00+03:00", now: "2026-06-01T22:56:00+03:00", quiet: ("22:55", "23:15")))
        // With `sendAt`: the awake period it fell due in.
        XCTAssertTrue(may(.morning, hasSendAt: true, due: "2026-06-01T09:00:00+03:00", now: "2026-06-01T22:00:00+03:00"))
        XCTAssertFalse(may(.morning, hasSendAt: true, due: "2026-06-01T09:00:00+03:00", now: "2026-06-01T23:30:00+03:00"))
        // A `sendAt` at night, outside any awake period: only its lifetime.
        XCTAssertTrue(may(.all, hasSendAt: true, due: "2026-06-01T03:00:00+03:00", now: "2026-06-01T03:10:00+03:00"))
        XCTAssertFalse(may(.all, hasSendAt: true, due: "2026-06-01T03:00:00+03:00", now: "2026-06-01T08:00:00+03:00"))
        // A night-shift user's evening (02:00–06:00 the next calendar day) belongs to the day before.
        XCTAssertTrue(
            may(.evening, due: "2026-06-02T02:00:00+03:00", now: "2026-06-02T05:30:00+03:00", wake: "18:00", sleep: "06:00"))
        XCTAssertFalse(
            may(.evening, due: "2026-06-02T02:00:00+03:00", now: "2026-06-02T06:30:00+03:00", wake: "18:00", sleep: "06:00"))
        // Quiet until 08:30: the morning greeting waits for their end; quiet all morning: none.
        XCTAssertEqual(
            send(.morning, due: "2026-06-01T07:00:00+03:00", now: "2026-06-01T07:00:01+03:00", quiet: ("22:00", "08:30")),
            at("2026-06-01T08:30:00+03:00"))
        XCTAssertNil(send(.morning, due: "2026-06-01T07:00:00+03:00", now: "2026-06-01T07:00:01+03:00", quiet: ("22:00", "11:30")))
        XCTAssertEqual(
            send(.noon, due: "2026-06-01T13:00:00+03:00", now: "2026-06-01T13:00:01+03:00", quiet: ("22:00", "08:30")),
            at("2026-06-01T13:00:01+03:00"))
        XCTAssertFalse(CampaignSchedule.reaches(ReminderSettings(enabled: false, billReminders: true)))
    }
}
