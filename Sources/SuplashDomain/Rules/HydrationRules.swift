/// Hydration rules of spec §6.
public enum HydrationRules {
    /// Recommended daily goal in ml: `weightKg × 35 × factor`, rounded to the nearest
    /// 50 ml (halves round up); 2500 ml when the weight is unknown.
    public static func recommendedGoalMl(weightKg: Double?, activityLevel: ActivityLevel) -> Int {
        guard let weightKg else { return 2500 }
        let raw = weightKg * 35 * activityLevel.goalFactor
        return Int((raw / 50).rounded(.toNearestOrAwayFromZero)) * 50
    }

    /// A day's goal in ml: the base goal, +500 ml when `maxTemperatureC` ≥ 30,
    /// +250 ml per full 30 `activeMinutes` (at most +1000 ml).
    public static func dayGoalMl(baseGoalMl: Int, maxTemperatureC: Double?, activeMinutes: Int?) -> Int {
        var goal = baseGoalMl
        if let t = maxTemperatureC, t >= 30 { goal += 500 }
        if let m = activeMinutes, m > 0 { goal += min(4, m / 30) * 250 }
        return goal
    }
}
