/// Bucket interval of `stats` (spec §4).
public enum StatsInterval: String, Sendable, CaseIterable {
    /// One local day (23, 24 or 25 hours).
    case day
    /// Monday to Sunday.
    case week
    /// A calendar month.
    case month
}

/// One stats bucket (spec §4): `start` is the bucket's first day (a Monday for weeks, the
/// 1st for months), the figures cover only its days inside the requested range.
public struct StatsBucket: Sendable, Equatable {
    /// First day of the bucket.
    public var start: LocalDate
    /// ml.
    public var totalMl: Int
    /// Sum of the day goals of the bucket's days in range, ml.
    public var goalMl: Int
    /// Days in range whose total reached their goal.
    public var daysGoalMet: Int
    /// Live entries in range.
    public var entriesCount: Int

    public init(start: LocalDate, totalMl: Int = 0, goalMl: Int = 0, daysGoalMet: Int = 0, entriesCount: Int = 0) {
        self.start = start
        self.totalMl = totalMl
        self.goalMl = goalMl
        self.daysGoalMet = daysGoalMet
        self.entriesCount = entriesCount
    }
}

/// Stats bucketing (spec §4): local dates, both inclusive, every bucket present.
public enum StatsRules {
    /// At most this many buckets per call (366 day buckets; the same cap for weeks and months).
    public static let maxBuckets = 366

    /// Why a stats query is refused (the API answers 400).
    public enum QueryError: Error, Sendable, Equatable {
        /// `to` is before `from`.
        case reversedRange
        /// More than `maxBuckets` buckets.
        case tooManyBuckets
    }

    /// The first day of the bucket containing `date`.
    public static func bucketStart(_ date: LocalDate, _ interval: StatsInterval) -> LocalDate {
        switch interval {
        case .day: date
        case .week: date.startOfWeek
        case .month: date.startOfMonth
        }
    }

    /// The bucket starts of `[from, to]`, oldest first.
    /// - Throws: `QueryError`.
    public static func bucketStarts(from: LocalDate, to: LocalDate, interval: StatsInterval) throws(QueryError) -> [LocalDate] {
        guard from <= to else { throw QueryError.reversedRange }
        let roughCount: Int
        switch interval {
        case .day: roughCount = to.dayNumber - from.dayNumber + 1
        case .week: roughCount = (to.startOfWeek.dayNumber - from.startOfWeek.dayNumber) / 7 + 1
        case .month: roughCount = (to.year - from.year) * 12 + (to.month - from.month) + 1
        }
        guard roughCount <= maxBuckets else { throw QueryError.tooManyBuckets }
        var starts: [LocalDate] = []
        var cursor = bucketStart(from, interval)
        while cursor <= to {
            starts.append(cursor)
            switch interval {
            case .day: cursor = cursor.adding(days: 1)
            case .week: cursor = cursor.adding(days: 7)
            case .month: cursor = cursor.startOfNextMonth
            }
        }
        return starts
    }

    /// Builds every bucket of `[from, to]`: each day in range adds its total, its goal
    /// (`baseGoalMl` raised by that day's context) and whether the total reached it.
    /// - Parameters:
    ///   - totals: per-day totals (days without entries may be absent).
    ///   - contexts: per-day context (absent = none).
    /// - Throws: `QueryError`.
    public static func buckets(
        from: LocalDate, to: LocalDate, interval: StatsInterval, baseGoalMl: Int,
        totals: [LocalDate: DayTotal], contexts: [LocalDate: DayContextContent]
    ) throws(QueryError) -> [StatsBucket] {
        let starts = try bucketStarts(from: from, to: to, interval: interval)
        var buckets = starts.map { StatsBucket(start: $0) }
        var index = 0
        for n in from.dayNumber...to.dayNumber {
            let day = LocalDate(dayNumber: n)
            while index + 1 < buckets.count, buckets[index + 1].start <= day { index += 1 }
            let goal = HydrationRules.dayGoalMl(baseGoalMl: baseGoalMl, context: contexts[day])
            let total = totals[day]
            buckets[index].goalMl += goal
            if let total {
                buckets[index].totalMl += total.totalMl
                buckets[index].entriesCount += total.entriesCount
                if total.totalMl >= goal { buckets[index].daysGoalMet += 1 }
            }
        }
        return buckets
    }
}
