import SuplashDomain
import XCTest

/// Instant of an RFC 3339 timestamp (ms); fails the test on bad text.
func at(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> Int64 {
    guard let t = RFC3339.parse(text) else {
        XCTFail("bad timestamp \(text)", file: file, line: line)
        return 0
    }
    return t
}

func day(_ text: String) -> LocalDate { LocalDate(parsing: text) ?? LocalDate(dayNumber: 0) }

func clockTime(_ text: String) -> ClockTime { ClockTime(parsing: text) ?? ClockTime(hour: 0, minute: 0)! }

func zone(_ id: String, file: StaticString = #filePath, line: UInt = #line) throws -> ZoneClock {
    try XCTUnwrap(ZoneClock(timeZoneID: id), file: file, line: line)
}

/// Hydration reminders: waking window, DST, adaptive and fixed timing, ignored streaks,
/// maxPerDay, quiet hours (spec §9, docs/reminders.md).
final class ReminderScheduleTests: XCTestCase {
    // Istanbul (UTC+3, no DST), wake 07:00, sleep 23:00: window 07:30–22:00 local, 14.5 h.
    // A goal of 2900 ml spreads uniformly at 200 ml per hour.

    private func plan(
        now: String, logged: [(String, Int)] = [], goal: Int = 2900,
        settings: ReminderSettings = ReminderSettings(), history: [ReminderRecord] = [],
        lastWrite: String? = nil, hourly: HourlyDrinking = .none, wake: String = "07:00",
        sleep: String = "23:00", zoneID: String = "Europe/Istanbul", cups: [Int] = [150, 250, 330, 500],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> HydrationPlan {
        let clock = try zone(zoneID, file: file, line: line)
        let n = at(now, file: file, line: line)
        let window = WakingWindow.current(at: n, wake: clockTime(wake), sleep: clockTime(sleep), clock: clock)
        let intake = logged.map { IntakeEvent(loggedAt: at($0.0, file: file, line: line), amountMl: $0.1) }
        let written = lastWrite.map { at($0, file: file, line: line) } ?? intake.map(\.loggedAt).max()
        return HydrationSchedule.plan(
            HydrationScheduleInput(
                window: window, clock: clock, settings: settings, cupSizesMl: cups, goalMl: goal, intake: intake,
                lastIntakeWrittenAt: written, hourly: hourly, history: history, now: n))
    }

    private func sent(
        _ id: String, _ time: String, _ outcome: ReminderOutcome = .ignored,
        kind: ReminderKind = .hydration
    ) -> ReminderRecord {
        ReminderRecord(id: id, kind: kind, dueAt: at(time), sentAt: at(time), outcome: outcome)
    }

    // MARK: Wall times and windows

    func testWallTimesInDSTGapsMoveToTheNextValidMinute() throws {
        let ny = try zone("America/New_York")
        let berlin = try zone("Europe/Berlin")
        // America/New_York 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
        XCTAssertEqual(ny.instant(of: day("2026-03-08"), at: clockTime("02:30")), at("2026-03-08T07:00:00Z"))
        XCTAssertEqual(ny.instant(of: day("2026-03-08"), at: clockTime("01:59")), at("2026-03-08T06:59:00Z"))
        XCTAssertEqual(ny.instant(of: day("2026-03-08"), at: clockTime("03:00")), at("2026-03-08T07:00:00Z"))
        // Europe/Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z).
        XCTAssertEqual(berlin.instant(of: day("2026-03-29"), at: clockTime("02:15")), at("2026-03-29T01:00:00Z"))
        XCTAssertEqual(berlin.instant(of: day("2026-03-29"), at: clockTime("07:00")), at("2026-03-29T05:00:00Z"))
        XCTAssertEqual(
            try zone("Europe/Istanbul").instant(of: day("2026-06-01"), at: clockTime("07:00")),
            at("2026-06-01T04:00:00Z"))
    }

    func testRepeatedWallTimesAreTheirFirstOccurrence() throws {
        let ny = try zone("America/New_York")
        let berlin = try zone("Europe/Berlin")
        // Europe/Berlin 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00Z); 02:30 happens twice.
        XCTAssertEqual(berlin.instant(of: day("2026-10-25"), at: clockTime("02:30")), at("2026-10-25T00:30:00Z"))
        XCTAssertEqual(berlin.wallMinuteOfDay(at: at("2026-10-25T01:30:00Z")), 150)  // the second 02:30
        // America/New_York 2026-11-01: 01:30 EDT (05:30Z) and 01:30 EST (06:30Z).
        XCTAssertEqual(ny.instant(of: day("2026-11-01"), at: clockTime("01:30")), at("2026-11-01T05:30:00Z"))
    }

    func testWallTimeResolutionHoldsOnEveryDayOfTheYear() throws {
        // Half-hour DST (Lord Howe), southern hemisphere (Sydney), a midnight gap (Santiago), the usual two.
        for id in ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Australia/Sydney", "America/Santiago"] {
            let clock = try zone(id)
            var gaps = 0
            for n in 0..<365 {
                let date = day("2026-01-01").adding(days: n)
                for minute in [0, 30, 90, 135, 150, 330, 1410] {
                    let time = try XCTUnwrap(ClockTime(hour: minute / 60, minute: minute % 60))
                    let r = clock.instant(of: date, at: time)
                    if clock.localDate(of: r) == date && clock.wallMinuteOfDay(at: r) == minute {
                        // Valid: and no earlier instant shows the same wall time (first occurrence).
                        for back: Int64 in [1_800_000, 3_600_000] {
                            XCTAssertFalse(
                                clock.localDate(of: r - back) == date && clock.wallMinuteOfDay(at: r - back) == minute,
                                "\(id) \(date) \(time)")
                        }
                    } else {
                        // A gap: the result is the transition, the first instant after the missing wall time.
                        gaps += 1
                        XCTAssertNotEqual(clock.offsetSeconds(at: r - 1), clock.offsetSeconds(at: r), "\(id) \(date) \(time)")
                        let before = clock.wallMinuteOfDay(at: r - 1) + (clock.localDate(of: r - 1) == date ? 0 : -1440)
                        let after = clock.wallMinuteOfDay(at: r) + (clock.localDate(of: r) == date ? 0 : 1440)
                        XCTAssertLessThan(before, minute, "\(id) \(date) \(time)")
                        XCTAssertGreaterThan(after, minute, "\(id) \(date) \(time)")
                    }
                }
            }
            XCTAssertGreaterThan(gaps, 0, "\(id) has a spring-forward gap at one of the probed minutes")
        }
    }

    func testWindowBounds() throws {
        let ist = try zone("Europe/Istanbul")
        let w = WakingWindow(day: day("2026-06-01"), wake: clockTime("07:00"), sleep: clockTime("23:00"), clock: ist)
        XCTAssertEqual(w.start, at("2026-06-01T07:30:00+03:00"))
        XCTAssertEqual(w.end, at("2026-06-01T22:00:00+03:00"))
        XCTAssertEqual(w.dayStart, at("2026-06-01T00:00:00+03:00"))
        XCTAssertEqual(w.countEnd, at("2026-06-02T00:00:00+03:00"))
        XCTAssertFalse(w.isEmpty)
        // 90 minutes awake leave a single instant; less leaves nothing.
        XCTAssertFalse(
            WakingWindow(
                day: day("2026-06-01"), wake: clockTime("07:00"), sleep: clockTime("08:30"),
                clock: ist
            ).isEmpty)
        XCTAssertTrue(
            WakingWindow(
                day: day("2026-06-01"), wake: clockTime("07:00"), sleep: clockTime("08:29"),
                clock: ist
            ).isEmpty)
    }

    func testWindowAcrossMidnightBelongsToTheDayItStarted() throws {
        let ist = try zone("Europe/Istanbul")
        let wake = clockTime("18:00")
        let sleep = clockTime("04:00")
        let w = WakingWindow(day: day("2026-06-01"), wake: wake, sleep: sleep, clock: ist)
        XCTAssertEqual(w.start, at("2026-06-01T18:30:00+03:00"))
        XCTAssertEqual(w.end, at("2026-06-02T03:00:00+03:00"))
        XCTAssertEqual(w.countEnd, at("2026-06-02T04:00:00+03:00"))
        // 01:00 on the 2nd is still the 1st's reminder day; 03:30 is the 2nd's (not open yet).
        XCTAssertEqual(
            WakingWindow.current(at: at("2026-06-02T01:00:00+03:00"), wake: wake, sleep: sleep, clock: ist).day,
            day("2026-06-01"))
        XCTAssertEqual(
            WakingWindow.current(at: at("2026-06-02T03:30:00+03:00"), wake: wake, sleep: sleep, clock: ist).day,
            day("2026-06-02"))
        // A plain window: after its end the next day's window is current.
        XCTAssertEqual(
            WakingWindow.current(
                at: at("2026-06-01T22:30:00+03:00"), wake: clockTime("07:00"),
                sleep: clockTime("23:00"), clock: ist
            ).day, day("2026-06-02"))
        XCTAssertEqual(
            WakingWindow.current(
                at: at("2026-06-01T05:00:00+03:00"), wake: clockTime("07:00"),
                sleep: clockTime("23:00"), clock: ist
            ).day, day("2026-06-01"))
    }

    func testLogsAfterMidnightCountForAWindowThatCrossesIt() throws {
        let p = try plan(
            now: "2026-06-02T01:00:00+03:00",
            logged: [
                ("2026-06-01T20:00:00+03:00", 1000), ("2026-06-02T00:30:00+03:00", 500),
                ("2026-05-31T23:00:00+03:00", 700),
            ],
            goal: 2500, wake: "14:00", sleep: "04:00")
        XCTAssertEqual(p.day, day("2026-06-01"))
        XCTAssertEqual(p.loggedMl, 1500)
        // Window 14:30–03:00 (12.5 h, 200 ml/h): at 01:00 the curve is at 2100 ml → behind, due now.
        XCTAssertEqual(p.reason, .behind)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-02T01:00:00+03:00"))
    }

    func testNewYorkSpringGapAtWakeTime() throws {
        // Wake 02:30 does not exist on 2026-03-08: waking moves to 03:00 EDT, the window opens at 03:30 EDT.
        let ny = try zone("America/New_York")
        let w = WakingWindow(day: day("2026-03-08"), wake: clockTime("02:30"), sleep: clockTime("23:00"), clock: ny)
        XCTAssertEqual(w.wakeAt, at("2026-03-08T07:00:00Z"))
        XCTAssertEqual(w.start, at("2026-03-08T07:30:00Z"))
        XCTAssertEqual(w.end, at("2026-03-09T02:00:00Z"))  // 22:00 EDT
        let first = try plan(now: "2026-03-08T06:30:00Z", wake: "02:30", zoneID: "America/New_York")
        XCTAssertEqual(first.day, day("2026-03-08"))
        XCTAssertEqual(first.reminder?.dueAt, at("2026-03-08T07:30:00Z"))
    }

    func testBerlinSpringGapAtWakeTime() throws {
        let p = try plan(now: "2026-03-29T00:00:00Z", wake: "02:15", zoneID: "Europe/Berlin")
        // 02:15 is skipped: waking at 03:00 CEST (01:00Z), first reminder at 01:30Z.
        XCTAssertEqual(p.day, day("2026-03-29"))
        XCTAssertEqual(p.reminder?.dueAt, at("2026-03-29T01:30:00Z"))
    }

    func testBerlinAutumnRepeatCountsTheRepeatedHourTwice() throws {
        let berlin = try zone("Europe/Berlin")
        // Night shift 20:00–08:00 from 2026-10-24: 20:30 CEST (18:30Z) to 07:00 CET (06:00Z) = 11.5 h real time.
        let w = WakingWindow(day: day("2026-10-24"), wake: clockTime("20:00"), sleep: clockTime("08:00"), clock: berlin)
        XCTAssertEqual(w.start, at("2026-10-24T18:30:00Z"))
        XCTAssertEqual(w.end, at("2026-10-25T06:00:00Z"))
        let uniform = ExpectedCurve(window: w, goalMl: 2300, hourly: .none, clock: berlin)
        XCTAssertEqual(uniform.expectedMl(at: w.start + (w.end - w.start) / 2), 1150, accuracy: 0.01)
        XCTAssertEqual(uniform.expectedMl(at: w.end), 2300, accuracy: 0.01)
        // A user who drinks only at 02:xx: both passes of 02:00–03:00 (00:00Z–01:00Z CEST, 01:00Z–02:00Z CET) weigh the same
        // and far more than an ordinary hour.
        var totals = Array(repeating: 0, count: 24)
        totals[2] = 7000
        let curve = ExpectedCurve(window: w, goalMl: 2300, hourly: HourlyDrinking(totalsMl: totals, days: 14), clock: berlin)
        let firstPass = curve.expectedMl(at: at("2026-10-25T01:00:00Z")) - curve.expectedMl(at: at("2026-10-25T00:00:00Z"))
        let secondPass = curve.expectedMl(at: at("2026-10-25T02:00:00Z")) - curve.expectedMl(at: at("2026-10-25T01:00:00Z"))
        let ordinary = curve.expectedMl(at: at("2026-10-24T23:00:00Z")) - curve.expectedMl(at: at("2026-10-24T22:00:00Z"))
        XCTAssertEqual(firstPass, secondPass, accuracy: 0.01)
        XCTAssertGreaterThan(firstPass, 10 * ordinary)
        XCTAssertEqual(curve.expectedMl(at: w.end), 2300, accuracy: 0.01)
    }

    // MARK: Adaptive timing

    func testOnTrackWaitsUntilTheCurveOvertakesTheLoggedTotal() throws {
        let p = try plan(
            now: "2026-06-01T10:00:00+03:00",
            logged: [("2026-06-01T08:00:00+03:00", 300), ("2026-06-01T09:30:00+03:00", 300)])
        // Curve at 10:00 = 500 ml < 600 logged; it reaches 600 three hours after 07:30.
        XCTAssertEqual(p.reason, .onTrack)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-01T10:30:00+03:00"))
        // Gap to the curve one interval later (12:00: 900 ml) is 300 ml → the 330 ml cup.
        XCTAssertEqual(p.reminder?.suggestedAmountMl, 330)
        XCTAssertEqual(p.loggedMl, 600)
    }

    func testBehindIsRemindedAsSoonAsTheGapAllows() throws {
        let logged = [("2026-06-01T08:00:00+03:00", 300)]
        let free = try plan(now: "2026-06-01T12:00:00+03:00", logged: logged)
        XCTAssertEqual(free.reason, .behind)
        XCTAssertEqual(free.reminder?.dueAt, at("2026-06-01T12:00:00+03:00"))
        // 1200 ml expected by 13:30, 300 logged: no cup covers 900 ml → the largest.
        XCTAssertEqual(free.reminder?.suggestedAmountMl, 500)
        // A reminder at 11:00 holds the next one to 12:30.
        let gapped = try plan(
            now: "2026-06-01T12:00:00+03:00", logged: logged,
            history: [sent("r1", "2026-06-01T11:00:00+03:00")])
        XCTAssertEqual(gapped.reminder?.dueAt, at("2026-06-01T12:30:00+03:00"))
        XCTAssertFalse(gapped.gapDoubled)
        // On track at the same moment: no reminder until 13:30 (1200 ml on the curve).
        let ahead = try plan(now: "2026-06-01T12:00:00+03:00", logged: [("2026-06-01T11:00:00+03:00", 1200)])
        XCTAssertEqual(ahead.reminder?.dueAt, at("2026-06-01T13:30:00+03:00"))
        // The suggestion grows with the deficit.
        let slightly = try plan(now: "2026-06-01T12:00:00+03:00", logged: [("2026-06-01T11:00:00+03:00", 800)])
        XCTAssertEqual(slightly.reason, .behind)
        XCTAssertEqual(slightly.reminder?.suggestedAmountMl, 500)
        let barely = try plan(now: "2026-06-01T12:00:00+03:00", logged: [("2026-06-01T11:00:00+03:00", 880)])
        XCTAssertEqual(barely.reason, .behind)
        XCTAssertEqual(barely.reminder?.suggestedAmountMl, 330)
    }

    func testRecomputingWithoutAWriteGivesTheSameDueTime() throws {
        let logged = [("2026-06-01T08:00:00+03:00", 300), ("2026-06-01T09:30:00+03:00", 300)]
        for now in ["2026-06-01T10:00:00+03:00", "2026-06-01T10:10:00+03:00", "2026-06-01T10:29:59+03:00"] {
            XCTAssertEqual(try plan(now: now, logged: logged).reminder?.dueAt, at("2026-06-01T10:30:00+03:00"), now)
        }
        let history = [sent("r1", "2026-06-01T11:00:00+03:00")]
        for now in ["2026-06-01T11:00:01+03:00", "2026-06-01T11:40:00+03:00", "2026-06-01T12:29:00+03:00"] {
            XCTAssertEqual(
                try plan(now: now, logged: logged, history: history).reminder?.dueAt,
                at("2026-06-01T12:30:00+03:00"), now)
        }
    }

    func testAfterTheWindowThePlanIsForTheNextDay() throws {
        let p = try plan(
            now: "2026-06-01T22:30:00+03:00", logged: [("2026-06-01T21:00:00+03:00", 1000)],
            history: [sent("r1", "2026-06-01T21:50:00+03:00")])
        XCTAssertEqual(p.day, day("2026-06-02"))
        XCTAssertEqual(p.loggedMl, 0)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-02T07:30:00+03:00"))
    }

    func testGoalMetMeansNoneForTheRestOfTheDay() throws {
        let p = try plan(now: "2026-06-01T15:00:00+03:00", logged: [("2026-06-01T14:00:00+03:00", 2900)])
        XCTAssertNil(p.reminder)
        XCTAssertEqual(p.reason, .goalMet)
        XCTAssertEqual(p.recheckAt, at("2026-06-01T22:00:00+03:00"))
        let fixed = try plan(
            now: "2026-06-01T15:00:00+03:00", logged: [("2026-06-01T14:00:00+03:00", 3000)],
            settings: ReminderSettings(mode: .fixed))
        XCTAssertEqual(fixed.reason, .goalMet)
        XCTAssertNil(fixed.reminder)
    }

    func testHotDayBringsTheReminderEarlier() throws {
        let logged = [("2026-06-01T08:00:00+03:00", 300), ("2026-06-01T09:30:00+03:00", 300)]
        let mild = try plan(
            now: "2026-06-01T10:00:00+03:00", logged: logged,
            goal: HydrationRules.dayGoalMl(baseGoalMl: 2900, maxTemperatureC: 24, activeMinutes: nil))
        let hot = try plan(
            now: "2026-06-01T10:00:00+03:00", logged: logged,
            goal: HydrationRules.dayGoalMl(baseGoalMl: 2900, maxTemperatureC: 33, activeMinutes: nil))
        XCTAssertEqual(mild.reminder?.dueAt, at("2026-06-01T10:30:00+03:00"))
        // 3400 ml over 870 min reaches 600 ml after 153.5 min: 10:03:32, rounded up to the minute.
        XCTAssertEqual(hot.reminder?.dueAt, at("2026-06-01T10:04:00+03:00"))
    }

    func testOwnDrinkingPatternShapesTheCurve() throws {
        // Someone who drinks in the afternoon: at 10:00 with nothing logged the curve is still low.
        var totals = Array(repeating: 0, count: 24)
        for h in 14...18 { totals[h] = 3000 }
        let pattern = HourlyDrinking(totalsMl: totals, days: 14)
        let own = try plan(now: "2026-06-01T07:00:00+03:00", logged: [("2026-06-01T07:10:00+03:00", 500)], hourly: pattern)
        let uniform = try plan(now: "2026-06-01T07:00:00+03:00", logged: [("2026-06-01T07:10:00+03:00", 500)])
        XCTAssertEqual(uniform.reminder?.dueAt, at("2026-06-01T10:00:00+03:00"))  // 500 ml at 200 ml/h
        let ownDue = try XCTUnwrap(own.reminder?.dueAt)
        XCTAssertGreaterThan(ownDue, at("2026-06-01T13:00:00+03:00"))
        XCTAssertLessThan(ownDue, at("2026-06-01T15:00:00+03:00"))
        // Fewer days of history weigh less: with one day the curve is close to uniform.
        let oneDay = try plan(
            now: "2026-06-01T07:00:00+03:00", logged: [("2026-06-01T07:10:00+03:00", 500)],
            hourly: HourlyDrinking(totalsMl: totals, days: 1))
        let oneDayDue = try XCTUnwrap(oneDay.reminder?.dueAt)
        XCTAssertGreaterThan(oneDayDue, at("2026-06-01T10:00:00+03:00"))
        XCTAssertLessThan(oneDayDue, ownDue)
        XCTAssertEqual(HourlyDrinking.none.hourWeights, Array(repeating: 1, count: 24))
    }

    func testFirstReminderOfTheDayIsAtWindowStartWithNothingLogged() throws {
        let p = try plan(now: "2026-06-01T05:00:00+03:00")
        XCTAssertEqual(p.reason, .onTrack)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-01T07:30:00+03:00"))
        // 300 ml expected by 09:00, but 2900 ml over at most 8 reminders is 362.5 ml each → the 500 ml cup.
        XCTAssertEqual(p.reminder?.suggestedAmountMl, 500)
        // With 24 reminders allowed the curve decides: 330 ml.
        XCTAssertEqual(
            try plan(now: "2026-06-01T05:00:00+03:00", settings: ReminderSettings(maxPerDay: 24))
                .reminder?.suggestedAmountMl, 330)
    }

    // MARK: Ignored reminders

    func testThreeIgnoredInARowDoubleTheGapUntilTheUserActsOrDrinks() throws {
        let history = [
            sent("r1", "2026-06-01T08:00:00+03:00"), sent("r2", "2026-06-01T09:30:00+03:00"),
            sent("r3", "2026-06-01T11:00:00+03:00", .pending),
        ]
        let logged = [("2026-06-01T07:45:00+03:00", 150)]
        let slowed = try plan(now: "2026-06-01T11:05:00+03:00", logged: logged, history: history)
        XCTAssertTrue(slowed.gapDoubled)
        XCTAssertEqual(slowed.reminder?.dueAt, at("2026-06-01T14:00:00+03:00"))  // 11:00 + 2 × 90 min
        // Water logged after the third: back to the normal gap.
        let drank = try plan(
            now: "2026-06-01T11:05:00+03:00", logged: logged, history: history,
            lastWrite: "2026-06-01T11:03:00+03:00")
        XCTAssertFalse(drank.gapDoubled)
        XCTAssertEqual(drank.reminder?.dueAt, at("2026-06-01T12:30:00+03:00"))
        // An action on the latest (opened): back to normal.
        var acted = history
        acted[2].outcome = .opened
        let opened = try plan(now: "2026-06-01T11:05:00+03:00", logged: logged, history: acted)
        XCTAssertFalse(opened.gapDoubled)
        XCTAssertEqual(opened.reminder?.dueAt, at("2026-06-01T12:30:00+03:00"))
        // Two ignored are not enough.
        let two = try plan(now: "2026-06-01T11:05:00+03:00", logged: logged, history: Array(history.dropFirst()))
        XCTAssertFalse(two.gapDoubled)
    }

    func testIgnoredStreakCounting() {
        let history = [
            sent("a", "2026-06-01T07:30:00Z", .acted), sent("b", "2026-06-01T09:00:00Z"),
            sent("c", "2026-06-01T10:30:00Z"), sent("d", "2026-06-01T12:00:00Z", .pending),
            sent("bill", "2026-06-01T12:10:00Z", .pending, kind: .bill),
            ReminderRecord(
                id: "x", kind: .hydration, dueAt: at("2026-06-01T13:00:00Z"), sentAt: nil,
                outcome: .cancelled),
        ]
        XCTAssertEqual(HydrationSchedule.ignoredStreak(history: history, lastIntakeWrittenAt: nil), 3)
        XCTAssertEqual(HydrationSchedule.ignoredStreak(history: history.reversed(), lastIntakeWrittenAt: at("2026-06-01T07:00:00Z")), 3)
        XCTAssertEqual(HydrationSchedule.ignoredStreak(history: history, lastIntakeWrittenAt: at("2026-06-01T11:00:00Z")), 1)
        XCTAssertEqual(HydrationSchedule.ignoredStreak(history: history, lastIntakeWrittenAt: at("2026-06-01T12:00:00Z")), 0)
        XCTAssertEqual(HydrationSchedule.ignoredStreak(history: [], lastIntakeWrittenAt: nil), 0)
        XCTAssertTrue(ReminderOutcome.snoozed.isUserAction)
        XCTAssertTrue(ReminderOutcome.dismissed.isUserAction)
        XCTAssertFalse(ReminderOutcome.ignored.isUserAction)
    }

    // MARK: Fixed mode

    func testFixedModeEveryIntervalInsideTheWindow() throws {
        let fixed = ReminderSettings(mode: .fixed)
        XCTAssertEqual(
            try plan(now: "2026-06-01T06:00:00+03:00", settings: fixed).reminder?.dueAt,
            at("2026-06-01T07:30:00+03:00"))
        let p = try plan(now: "2026-06-01T08:00:00+03:00", settings: fixed)
        XCTAssertEqual(p.reason, .fixedInterval)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-01T09:00:00+03:00"))
        // Ahead of the curve even so: an even share of the rest over the 8 possible reminders (237.5 ml) → 250 ml.
        let ahead = try plan(now: "2026-06-01T08:00:00+03:00", logged: [("2026-06-01T07:40:00+03:00", 1000)], settings: fixed)
        XCTAssertEqual(ahead.reminder?.dueAt, at("2026-06-01T09:00:00+03:00"))
        XCTAssertEqual(ahead.reminder?.suggestedAmountMl, 250)
        // Far ahead: the smallest cup.
        let farAhead = try plan(now: "2026-06-01T08:00:00+03:00", logged: [("2026-06-01T07:40:00+03:00", 2000)], settings: fixed)
        XCTAssertEqual(farAhead.reminder?.suggestedAmountMl, 150)
        // After the 09:00 reminder (delivered 40 s late), the 10:30 slot.
        let onTime = ReminderRecord(
            id: "r", kind: .hydration, dueAt: at("2026-06-01T09:00:00+03:00"),
            sentAt: at("2026-06-01T09:00:40+03:00"), outcome: .acted)
        XCTAssertEqual(
            try plan(now: "2026-06-01T09:00:45+03:00", settings: fixed, history: [onTime]).reminder?.dueAt,
            at("2026-06-01T10:30:00+03:00"))
        // Delivered 50 minutes late (an outage): the gap counts from delivery, so 12:00.
        var late50 = onTime
        late50.sentAt = at("2026-06-01T09:50:00+03:00")
        XCTAssertEqual(
            try plan(now: "2026-06-01T09:50:05+03:00", settings: fixed, history: [late50]).reminder?.dueAt,
            at("2026-06-01T12:00:00+03:00"))
        // The 22:30 slot is past the window's end (22:00).
        let late = try plan(now: "2026-06-01T21:10:00+03:00", settings: fixed)
        XCTAssertNil(late.reminder)
        XCTAssertEqual(late.reason, .windowClosed)
        XCTAssertEqual(late.recheckAt, at("2026-06-01T22:00:00+03:00"))
    }

    // MARK: maxPerDay, quiet hours, switches

    func testMaxPerDay() throws {
        let two = ReminderSettings(maxPerDay: 2)
        let full = try plan(
            now: "2026-06-01T12:00:00+03:00", settings: two,
            history: [sent("a", "2026-06-01T08:00:00+03:00", .acted), sent("b", "2026-06-01T10:00:00+03:00", .acted)])
        XCTAssertNil(full.reminder)
        XCTAssertEqual(full.reason, .maxPerDayReached)
        // Yesterday's reminders and cancelled ones do not count.
        let fresh = try plan(
            now: "2026-06-01T12:00:00+03:00", settings: two,
            history: [
                sent("a", "2026-05-31T20:00:00+03:00", .acted), sent("b", "2026-06-01T10:00:00+03:00", .acted),
                ReminderRecord(
                    id: "c", kind: .hydration, dueAt: at("2026-06-01T11:00:00+03:00"),
                    sentAt: nil, outcome: .cancelled),
            ])
        XCTAssertNotNil(fresh.reminder)
        // Bill reminders do not use the hydration allowance.
        let bills = try plan(
            now: "2026-06-01T12:00:00+03:00", settings: ReminderSettings(maxPerDay: 1),
            history: [sent("a", "2026-06-01T10:00:00+03:00", .acted, kind: .bill)])
        XCTAssertNotNil(bills.reminder)
    }

    func testQuietHoursMoveAdaptiveRemindersToTheirEnd() throws {
        let lunch = ReminderSettings(quietStart: clockTime("12:00"), quietEnd: clockTime("14:00"))
        let p = try plan(now: "2026-06-01T12:10:00+03:00", settings: lunch)
        XCTAssertEqual(p.reason, .behind)
        XCTAssertEqual(p.reminder?.dueAt, at("2026-06-01T14:00:00+03:00"))
        // Quiet hours across midnight, 21:00–08:00: the 07:30 start waits until 08:00 …
        let night = ReminderSettings(quietStart: clockTime("21:00"), quietEnd: clockTime("08:00"))
        XCTAssertEqual(
            try plan(now: "2026-06-01T06:00:00+03:00", settings: night).reminder?.dueAt,
            at("2026-06-01T08:00:00+03:00"))
        // … and at 21:30 nothing more fits in the window.
        let late = try plan(now: "2026-06-01T21:30:00+03:00", settings: night)
        XCTAssertNil(late.reminder)
        XCTAssertEqual(late.reason, .windowClosed)
        // Quiet hours never hold a reminder: none falls inside them all day.
        var now = at("2026-06-01T07:00:00+03:00")
        let clock = try zone("Europe/Istanbul")
        while now < at("2026-06-01T22:00:00+03:00") {
            let window = WakingWindow.current(at: now, wake: clockTime("07:00"), sleep: clockTime("23:00"), clock: clock)
            let q = ReminderSettings(quietStart: clockTime("13:15"), quietEnd: clockTime("15:40"))
            let r = HydrationSchedule.plan(
                HydrationScheduleInput(
                    window: window, clock: clock, settings: q, cupSizesMl: [250], goalMl: 2900, intake: [],
                    lastIntakeWrittenAt: nil, hourly: .none, history: [], now: now))
            if let due = r.reminder?.dueAt {
                XCTAssertFalse(q.quietHours?.contains(minuteOfDay: clock.wallMinuteOfDay(at: due)) ?? true)
                XCTAssertGreaterThanOrEqual(due, now)
            }
            now += 17 * 60_000
        }
    }

    func testQuietHoursSkipFixedSlots() throws {
        let s = ReminderSettings(mode: .fixed, quietStart: clockTime("10:00"), quietEnd: clockTime("11:00"))
        // 10:30 is quiet; the next slot after 11:00 is 12:00.
        XCTAssertEqual(
            try plan(now: "2026-06-01T09:10:00+03:00", settings: s).reminder?.dueAt,
            at("2026-06-01T12:00:00+03:00"))
    }

    func testDisabledAndEmptyWindow() throws {
        let off = try plan(now: "2026-06-01T12:00:00+03:00", settings: ReminderSettings(enabled: false))
        XCTAssertNil(off.reminder)
        XCTAssertEqual(off.reason, .disabled)
        let short = try plan(now: "2026-06-01T06:00:00+03:00", wake: "07:00", sleep: "08:00")
        XCTAssertNil(short.reminder)
        XCTAssertEqual(short.reason, .emptyWindow)
    }

    /// Whole simulated days, one reminder after another, for users who drink what is suggested
    /// and for users who ignore everything: the rules hold for every reminder sent.
    func testSimulatedDaysKeepEveryRule() throws {
        let clock = try zone("Europe/Istanbul")
        let configs: [(String, ReminderSettings)] = [
            ("adaptive", ReminderSettings()),
            ("fixed", ReminderSettings(mode: .fixed)),
            ("quiet lunch", ReminderSettings(quietStart: clockTime("12:00"), quietEnd: clockTime("14:00"))),
            ("six, 45 min", ReminderSettings(intervalMinutes: 45, maxPerDay: 6)),  // 6 × 500 ml can reach 2900 ml
            ("fixed quiet night", ReminderSettings(mode: .fixed, quietStart: clockTime("20:00"), quietEnd: clockTime("08:00"))),
        ]
        for (name, settings) in configs {
            for complies in [true, false] {
                var history: [ReminderRecord] = []
                var intake: [IntakeEvent] = []
                var lastWrite: Int64?
                var now = at("2026-06-01T06:00:00+03:00")
                var last: HydrationPlan?
                for step in 0..<50 {
                    let window = WakingWindow.current(at: now, wake: clockTime("07:00"), sleep: clockTime("23:00"), clock: clock)
                    guard window.day == day("2026-06-01") else { break }
                    let p = HydrationSchedule.plan(
                        HydrationScheduleInput(
                            window: window, clock: clock, settings: settings, cupSizesMl: [150, 250, 330, 500], goalMl: 2900,
                            intake: intake, lastIntakeWrittenAt: lastWrite, hourly: .none, history: history, now: now))
                    last = p
                    guard let r = p.reminder else { break }
                    XCTAssertGreaterThanOrEqual(r.dueAt, now, name)
                    XCTAssertGreaterThanOrEqual(r.dueAt, window.start, name)
                    XCTAssertLessThanOrEqual(r.dueAt, window.end, name)
                    XCTAssertFalse(settings.quietHours?.contains(minuteOfDay: clock.wallMinuteOfDay(at: r.dueAt)) ?? false, name)
                    now = r.dueAt
                    var record = ReminderRecord(id: "r\(step)", kind: .hydration, dueAt: now, sentAt: now, outcome: .pending)
                    if complies {
                        intake.append(IntakeEvent(loggedAt: now, amountMl: r.suggestedAmountMl))
                        lastWrite = now
                        record.outcome = .acted
                    }
                    history.append(record)
                    now += 1000
                }
                let sent = history.map(\.dueAt)
                XCTAssertLessThanOrEqual(sent.count, settings.maxPerDay, name)
                XCTAssertGreaterThan(sent.count, 0, name)
                let gaps = zip(sent.dropFirst(), sent).map { $0 - $1 }
                let interval = Int64(settings.intervalMinutes) * 60_000
                for (i, gap) in gaps.enumerated() {
                    // The reminder after three ignored ones waits twice the interval.
                    XCTAssertGreaterThanOrEqual(gap, !complies && i >= 2 ? 2 * interval : interval, "\(name) gap \(i)")
                }
                if complies {
                    XCTAssertEqual(last?.reason, .goalMet, "\(name): drinking every suggestion reaches the goal")
                } else {
                    XCTAssertNotEqual(last?.reason, .goalMet, name)
                }
            }
        }
    }

    func testSuggestedAmount() {
        XCTAssertEqual(HydrationSchedule.suggestedAmount(gapMl: 200, cupSizesMl: [500, 150, 250]), 250)
        XCTAssertEqual(HydrationSchedule.suggestedAmount(gapMl: 250, cupSizesMl: [500, 150, 250]), 250)
        XCTAssertEqual(HydrationSchedule.suggestedAmount(gapMl: 900, cupSizesMl: [500, 150, 250]), 500)
        XCTAssertEqual(HydrationSchedule.suggestedAmount(gapMl: -40, cupSizesMl: [500, 150, 250]), 150)
        XCTAssertEqual(HydrationSchedule.suggestedAmount(gapMl: 100, cupSizesMl: []), 250)
    }
}
