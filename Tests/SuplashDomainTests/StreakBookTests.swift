import SuplashDomain
import XCTest

/// The achievements bookkeeping shared by the store adapters (spec §4, §6): day rows,
/// incremental streak updates against a goal-day index, rebuilds, badges kept.
final class StreakBookTests: XCTestCase {
    /// Goal days in memory, read the way the adapters' index queries read them.
    struct MemoryGoalDays: GoalDayIndex {
        var days: Set<LocalDate>

        func goalDays(from: LocalDate, descending: Bool, limit: Int) throws -> [LocalDate] {
            let sorted = days.sorted()
            let picked = descending ? sorted.filter { $0 <= from }.reversed() : sorted.filter { $0 >= from }
            return Array(picked.prefix(limit))
        }

        func latestGoalDay() throws -> LocalDate? { days.max() }
        func allGoalDays() throws -> [LocalDate] { Array(days) }
    }

    func d(_ s: String) -> LocalDate { LocalDate(parsing: s) ?? LocalDate(dayNumber: 0) }
    func day(_ n: Int) -> LocalDate { d("2026-01-01").adding(days: n) }
    let met = DayTotalRow(totalMl: 2500, entriesCount: 3, goalMet: true)
    let unmet = DayTotalRow(totalMl: 500, entriesCount: 1, goalMet: false)

    func testDayRowIsDeletedWithoutEntriesAndMetAtTheGoal() {
        XCTAssertNil(StreakBook.dayRow(totalMl: 0, entriesCount: 0, goalMl: 2000))
        XCTAssertEqual(StreakBook.dayRow(totalMl: 2000, entriesCount: 2, goalMl: 2000)?.goalMet, true)
        XCTAssertEqual(StreakBook.dayRow(totalMl: 1999, entriesCount: 2, goalMl: 2000)?.goalMet, false)
    }

    func testWalkCrossesChunksOf64Days() throws {
        let index = MemoryGoalDays(days: Set((0..<150).map(day)))
        XCTAssertEqual(try StreakBook.walk(index, from: day(149), descending: true), 150)
        XCTAssertEqual(try StreakBook.walk(index, from: day(10), descending: false), 140)
        XCTAssertEqual(try StreakBook.walk(index, from: day(150), descending: true), 0)
        let latest = try StreakBook.latestRun(index)
        XCTAssertEqual(latest.0, day(149))
        XCTAssertEqual(latest.1, 150)
    }

    func testFirstEntryEarnsFirstLogOnly() throws {
        let step = try StreakBook.apply(
            Achievements(), changes: [DayTotalChange(date: day(0), before: nil, after: unmet)],
            anyWatchEntry: false, goalDays: MemoryGoalDays(days: []), now: 77)
        XCTAssertEqual(step.state.totalMl, 500)
        XCTAssertEqual(step.state.daysGoalMet, 0)
        XCTAssertEqual(step.newlyEarned, [.firstLog])
        XCTAssertEqual(step.state.badges, [EarnedBadge(badge: .firstLog, earnedAt: 77)])
        XCTAssertNil(step.state.latestRunEnd)
    }

    func testAThirdGoalDayInARowEarnsStreak3AndTheWatchBadge() throws {
        var state = Achievements(
            latestRunEnd: day(1), latestRunLength: 2, longestStreakDays: 2, totalMl: 5000,
            daysGoalMet: 2,
            badges: [
                EarnedBadge(badge: .firstLog, earnedAt: 1),
                EarnedBadge(badge: .firstGoal, earnedAt: 2),
            ])
        state.version = 4
        let index = MemoryGoalDays(days: [day(0), day(1), day(2)])  // after the write
        let step = try StreakBook.apply(
            state, changes: [DayTotalChange(date: day(2), before: unmet, after: met)],
            anyWatchEntry: true, goalDays: index, now: 99)
        XCTAssertEqual(step.state.totalMl, 7000)
        XCTAssertEqual(step.state.daysGoalMet, 3)
        XCTAssertEqual(step.state.latestRunEnd, day(2))
        XCTAssertEqual(step.state.latestRunLength, 3)
        XCTAssertEqual(step.state.longestStreakDays, 3)
        XCTAssertEqual(step.newlyEarned, [.streak3, .watchFirstLog])
        XCTAssertEqual(step.state.badges.first, EarnedBadge(badge: .firstLog, earnedAt: 1), "earned badges keep their time")
        XCTAssertTrue(StreakBook.changed(from: state, to: step.state))
        let saved = StreakBook.stamped(step.state, before: state, now: 99)
        XCTAssertEqual(saved.version, 5)
        XCTAssertEqual(saved.updatedAt, 99)
    }

    func testFillingAGapJoinsTwoRunsIntoTheLongest() throws {
        // Goal days 0–2 and 4–5; day 3 becomes a goal day → one run of 6.
        let state = Achievements(
            latestRunEnd: day(5), latestRunLength: 2, longestStreakDays: 3, totalMl: 12_500,
            daysGoalMet: 5)
        let index = MemoryGoalDays(days: Set([0, 1, 2, 3, 4, 5].map(day)))
        let step = try StreakBook.apply(
            state, changes: [DayTotalChange(date: day(3), before: unmet, after: met)],
            anyWatchEntry: false, goalDays: index, now: 5)
        XCTAssertEqual(step.state.longestStreakDays, 6)
        XCTAssertEqual(step.state.latestRunLength, 6)
    }

    func testLosingAGoalDayOfTheLongestRunRescansButKeepsBadges() throws {
        // Goal days 0–6 (a 7-day run, streak_7 earned); deleting day 3's entry splits it into 3 + 3.
        let earned = [
            EarnedBadge(badge: .firstLog, earnedAt: 1), EarnedBadge(badge: .firstGoal, earnedAt: 1),
            EarnedBadge(badge: .streak3, earnedAt: 3), EarnedBadge(badge: .streak7, earnedAt: 7),
        ]
        let state = Achievements(
            latestRunEnd: day(6), latestRunLength: 7, longestStreakDays: 7, totalMl: 17_500,
            daysGoalMet: 7, badges: earned)
        let index = MemoryGoalDays(days: Set([0, 1, 2, 4, 5, 6].map(day)))
        let step = try StreakBook.apply(
            state, changes: [DayTotalChange(date: day(3), before: met, after: nil)],
            anyWatchEntry: false, goalDays: index, now: 9)
        XCTAssertEqual(step.state.totalMl, 15_000)
        XCTAssertEqual(step.state.daysGoalMet, 6)
        XCTAssertEqual(step.state.longestStreakDays, 3)
        XCTAssertEqual(step.state.latestRunLength, 3)
        XCTAssertEqual(step.state.badges, earned, "badges are never taken away")
        XCTAssertEqual(step.newlyEarned, [])
    }

    func testLosingAGoalDayOutsideTheLongestRunKeepsTheLongest() throws {
        // Runs 0–4 (5 days) and 10–11 (2 days); day 11 is lost → the longest stays 5 without a rescan.
        let state = Achievements(
            latestRunEnd: day(11), latestRunLength: 2, longestStreakDays: 5, totalMl: 17_500,
            daysGoalMet: 7)
        let index = MemoryGoalDays(days: Set([0, 1, 2, 3, 4, 10].map(day)))
        let step = try StreakBook.apply(
            state, changes: [DayTotalChange(date: day(11), before: met, after: unmet)],
            anyWatchEntry: false, goalDays: index, now: 9)
        XCTAssertEqual(step.state.longestStreakDays, 5)
        XCTAssertEqual(step.state.latestRunEnd, day(10))
        XCTAssertEqual(step.state.latestRunLength, 1)
        XCTAssertEqual(step.state.totalMl, 15_500)
    }

    func testAWriteThatChangesNoTotalsChangesNothing() throws {
        let state = Achievements(
            totalMl: 500, badges: [EarnedBadge(badge: .firstLog, earnedAt: 1)], updatedAt: 3,
            version: 2)
        let step = try StreakBook.apply(
            state, changes: [DayTotalChange(date: day(0), before: unmet, after: unmet)],
            anyWatchEntry: false, goalDays: MemoryGoalDays(days: []), now: 50)
        XCTAssertFalse(StreakBook.changed(from: state, to: step.state))
        XCTAssertEqual(step.newlyEarned, [])
    }

    func testRebuildUsesTheWholeHistoryAndKeepsBadges() throws {
        let earned = [EarnedBadge(badge: .watchFirstLog, earnedAt: 1), EarnedBadge(badge: .streak3, earnedAt: 2)]
        let index = MemoryGoalDays(days: Set([0, 1, 5, 6, 7, 8].map(day)))
        let step = try StreakBook.rebuild(
            Achievements(badges: earned), totalMl: 100_000, daysGoalMet: 6,
            goalDays: index, now: 10)
        XCTAssertEqual(step.state.longestStreakDays, 4)
        XCTAssertEqual(step.state.latestRunEnd, day(8))
        XCTAssertEqual(step.state.latestRunLength, 4)
        XCTAssertEqual(step.newlyEarned, [.firstLog, .firstGoal, .liters100])
        XCTAssertEqual(Array(step.state.badges.prefix(2)), earned)

        let none = try StreakBook.rebuild(
            Achievements(), totalMl: 0, daysGoalMet: 0, goalDays: MemoryGoalDays(days: []),
            now: 10)
        XCTAssertEqual(none.state, Achievements())
        XCTAssertEqual(none.newlyEarned, [])
    }
}
