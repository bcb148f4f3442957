import SuplashDomain
import XCTest

/// Streak rules, badges and stats buckets (spec §4, §6).
final class StreakAndStatsTests: XCTestCase {
    func d(_ s: String) -> LocalDate { LocalDate(parsing: s) ?? LocalDate(dayNumber: 0) }

    func testCurrentStreakToleratesAnOpenToday() {
        let today = d("2026-06-10")
        XCTAssertEqual(StreakRules.currentStreak(runEnd: d("2026-06-09"), runLength: 3, today: today), 3)
        XCTAssertEqual(StreakRules.currentStreak(runEnd: d("2026-06-10"), runLength: 4, today: today), 4)
        XCTAssertEqual(StreakRules.currentStreak(runEnd: d("2026-06-08"), runLength: 3, today: today), 0)
        XCTAssertEqual(StreakRules.currentStreak(runEnd: nil, runLength: 0, today: today), 0)
    }

    func testRunsAcrossMonthAndDSTBoundaries() {
        // Local dates, not 24-hour spans: the 23-hour 2026-03-29 in Berlin is one day of a run.
        let days = ["2026-03-28", "2026-03-29", "2026-03-30", "2026-04-01", "2026-03-31", "2026-04-03"].map(d)
        let runs = StreakRules.runs(days)
        XCTAssertEqual(runs.map(\.length), [5, 1])
        XCTAssertEqual(runs.first?.end, d("2026-04-01"))
        let desc = days.sorted(by: >)
        XCTAssertEqual(StreakRules.runLength(endingAt: d("2026-04-01"), metDescending: desc), 5)
        XCTAssertEqual(StreakRules.runLength(endingAt: d("2026-04-02"), metDescending: desc), 0)
    }

    func testBadgesAreAwardedOnceAndKept() {
        let q = StreakRules.qualifyingBadges(
            longestStreakDays: 7, totalMl: 100_000, daysGoalMet: 7, anyEntry: true,
            anyWatchEntry: false)
        XCTAssertEqual(Set(q), [.firstLog, .firstGoal, .streak3, .streak7, .liters100])
        let earned = StreakRules.award(q, to: [EarnedBadge(badge: .firstLog, earnedAt: 1)], now: 5)
        XCTAssertEqual(earned.first, EarnedBadge(badge: .firstLog, earnedAt: 1))
        XCTAssertEqual(earned.count, 5)
        // A lower streak later removes nothing.
        let later = StreakRules.award(
            StreakRules.qualifyingBadges(
                longestStreakDays: 0, totalMl: 0, daysGoalMet: 0,
                anyEntry: false, anyWatchEntry: true),
            to: earned, now: 9)
        XCTAssertEqual(later.count, 6)
        XCTAssertEqual(later.last, EarnedBadge(badge: .watchFirstLog, earnedAt: 9))
        XCTAssertEqual(
            Badge.allCases.map(\.rawValue),
            [
                "first_log", "first_goal", "streak_3", "streak_7", "streak_30", "streak_100", "streak_365", "liters_100",
                "liters_1000", "watch_first_log",
            ])
    }

    func testDayGoalFromContext() {
        XCTAssertEqual(
            HydrationRules.dayGoalMl(
                baseGoalMl: 2000,
                context: DayContextContent(
                    maxTemperatureC: 32.5,
                    activeMinutes: 65)), 3000)
        XCTAssertEqual(
            HydrationRules.dayGoalMl(
                baseGoalMl: 2000,
                context: DayContextContent(
                    maxTemperatureC: 29.9,
                    activeMinutes: 29)), 2000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, context: DayContextContent(activeMinutes: 1440)), 3000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, context: nil), 2000)
        var p = UserProfile(id: "u", email: "e", displayName: nil, now: 0)
        XCTAssertEqual(HydrationRules.baseGoalMl(p), 2500)
        p.weightKg = 70
        p.activityLevel = .moderate
        XCTAssertEqual(HydrationRules.baseGoalMl(p), 2950)
        p.dailyGoalMl = 1800
        XCTAssertEqual(HydrationRules.baseGoalMl(p), 1800)
    }

    func testDayBucketsIncludeEmptyDaysAndContext() throws {
        let totals = [d("2026-03-29"): DayTotal(date: d("2026-03-29"), totalMl: 650, entriesCount: 2)]
        let contexts = [d("2026-03-30"): DayContextContent(maxTemperatureC: 31)]
        let b = try StatsRules.buckets(
            from: d("2026-03-28"), to: d("2026-03-30"), interval: .day, baseGoalMl: 600,
            totals: totals, contexts: contexts)
        XCTAssertEqual(b.map(\.start.description), ["2026-03-28", "2026-03-29", "2026-03-30"])
        XCTAssertEqual(b.map(\.totalMl), [0, 650, 0])
        XCTAssertEqual(b.map(\.goalMl), [600, 600, 1100])
        XCTAssertEqual(b.map(\.daysGoalMet), [0, 1, 0])
    }

    func testWeekAndMonthBuckets() throws {
        var totals: [LocalDate: DayTotal] = [:]
        for i in 0..<14 {
            let day = d("2026-06-03").adding(days: i)
            totals[day] = DayTotal(date: day, totalMl: 500, entriesCount: 1)
        }
        // A Wednesday start: the first week bucket starts on its Monday but counts only days in range.
        let w = try StatsRules.buckets(
            from: d("2026-06-03"), to: d("2026-06-16"), interval: .week, baseGoalMl: 500,
            totals: totals, contexts: [:])
        XCTAssertEqual(w.map(\.start.description), ["2026-06-01", "2026-06-08", "2026-06-15"])
        XCTAssertEqual(w.map(\.daysGoalMet), [5, 7, 2])
        XCTAssertEqual(w.map(\.goalMl), [2500, 3500, 1000])
        let m = try StatsRules.buckets(
            from: d("2026-05-01"), to: d("2026-07-31"), interval: .month, baseGoalMl: 500,
            totals: totals, contexts: [:])
        XCTAssertEqual(m.map(\.start.description), ["2026-05-01", "2026-06-01", "2026-07-01"])
        XCTAssertEqual(m.map(\.totalMl), [0, 7000, 0])
        XCTAssertEqual(m.map(\.goalMl), [31 * 500, 30 * 500, 31 * 500])
    }

    func testBadRangesAreRefused() {
        XCTAssertThrowsError(try StatsRules.bucketStarts(from: d("2026-06-10"), to: d("2026-06-01"), interval: .day))
        XCTAssertNoThrow(try StatsRules.bucketStarts(from: d("2024-01-01"), to: d("2024-12-31"), interval: .day))  // 366
        XCTAssertThrowsError(try StatsRules.bucketStarts(from: d("2025-01-01"), to: d("2026-01-02"), interval: .day))
        XCTAssertNoThrow(try StatsRules.bucketStarts(from: d("2020-01-01"), to: d("2026-12-31"), interval: .week))
        XCTAssertThrowsError(try StatsRules.bucketStarts(from: d("1990-01-01"), to: d("2026-12-31"), interval: .month))
    }
}
