import SuplashDomain
import XCTest

final class HydrationRulesTests: XCTestCase {
    func testActivityFactors() {
        XCTAssertEqual(ActivityLevel.allCases.map(\.rawValue), ["sedentary", "light", "moderate", "active", "athlete"])
        XCTAssertEqual(ActivityLevel.allCases.map(\.goalFactor), [1.0, 1.1, 1.2, 1.35, 1.5])
    }

    func testRecommendedGoalExamples() {
        // 62.5 × 35 × 1.1 = 2406.25 → 2400
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 62.5, activityLevel: .light), 2400)
        // 70 × 35 × 1.2 = 2940 → 2950
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 70, activityLevel: .moderate), 2950)
        // 80 × 35 × 1.5 = 4200
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 80, activityLevel: .athlete), 4200)
        // 62 × 35 × 1.0 = 2170 → 2150
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 62, activityLevel: .sedentary), 2150)
        // 70 × 35 × 1.35 = 3307.5 → 3300
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 70, activityLevel: .active), 3300)
        // 20 × 35 × 1.0 = 700; 400 × 35 × 1.5 = 21000 (the field's bounds)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 20, activityLevel: .sedentary), 700)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 400, activityLevel: .athlete), 21_000)
    }

    func testUnknownWeightGives2500WhateverTheActivity() {
        for level in ActivityLevel.allCases {
            XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: nil, activityLevel: level), 2500)
        }
    }

    func testHalvesRoundAwayFromZero() {
        // 25 × 35 = 875 → 900; 45 × 35 = 1575 → 1600; 50 × 35 × 1.1 = 1925 → 1950;
        // 62.5 × 35 × 1.2 = 2625 → 2650; 30 × 35 × 1.5 = 1575 → 1600.
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 25, activityLevel: .sedentary), 900)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 45, activityLevel: .sedentary), 1600)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 50, activityLevel: .light), 1950)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 62.5, activityLevel: .moderate), 2650)
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 30, activityLevel: .athlete), 1600)
        // Just under a half rounds down.
        XCTAssertEqual(HydrationRules.recommendedGoalMl(weightKg: 24.9, activityLevel: .sedentary), 850)
    }

    func testRecommendedGoalIsAlwaysAMultipleOf50AndMonotonic() {
        for level in ActivityLevel.allCases {
            var previous = 0
            var weight = 20.0
            while weight <= 400 {
                let goal = HydrationRules.recommendedGoalMl(weightKg: weight, activityLevel: level)
                XCTAssertEqual(goal % 50, 0)
                XCTAssertGreaterThanOrEqual(goal, previous)
                XCTAssertLessThanOrEqual(abs(Double(goal) - weight * 35 * level.goalFactor), 25.000001)
                previous = goal
                weight += 0.1
            }
        }
    }

    func testProfileRecommendedGoalUsesTheRules() {
        var p = UserProfile(id: "u", email: "a@b.c", displayName: nil, now: 0)
        XCTAssertEqual(p.recommendedGoalMl, 2500)
        p.weightKg = 70
        p.activityLevel = .moderate
        XCTAssertEqual(p.recommendedGoalMl, 2950)
    }

    func testDayGoalWithoutContextIsTheBase() {
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: nil, activeMinutes: nil), 2000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 29.9, activeMinutes: 29), 2000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: -50, activeMinutes: 0), 2000)
    }

    func testHotDayAdds500() {
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 30, activeMinutes: nil), 2500)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 30.0001, activeMinutes: nil), 2500)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 60, activeMinutes: nil), 2500)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 29.999, activeMinutes: nil), 2000)
    }

    func testActiveMinutesAdd250PerFull30CappedAt1000() {
        let cases: [(Int, Int)] = [
            (0, 0), (1, 0), (29, 0), (30, 250), (59, 250), (60, 500), (65, 500), (89, 500),
            (90, 750), (119, 750), (120, 1000), (150, 1000), (1440, 1000),
        ]
        for (minutes, extra) in cases {
            XCTAssertEqual(
                HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: nil, activeMinutes: minutes),
                2000 + extra, "\(minutes) min")
        }
        // Negative minutes add nothing; absurd ones are capped, not an arithmetic overflow.
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: nil, activeMinutes: -90), 2000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: nil, activeMinutes: .max), 3000)
    }

    func testHotAndActiveAddUp() {
        // The acceptance example: 32.5 °C and 65 active minutes on a 2000 ml goal.
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2000, maxTemperatureC: 32.5, activeMinutes: 65), 3000)
        XCTAssertEqual(HydrationRules.dayGoalMl(baseGoalMl: 2950, maxTemperatureC: 35, activeMinutes: 600), 4450)
    }
}
