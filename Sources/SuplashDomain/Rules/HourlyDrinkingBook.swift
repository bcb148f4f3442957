/// The bookkeeping side of `HourlyDrinking` (smart reminders, docs/reminders.md,
/// "Storage"): which stored per-hour rows an entry write changes, and the `HourlyDrinking` a
/// set of stored rows means. Pure; the store keeps one row per (user, local day, local hour).
extension HourlyDrinking {
    /// One stored bucket: a local day and its wall-clock hour (0–23) in the profile's zone.
    public struct Bucket: Hashable, Sendable {
        public var date: LocalDate
        public var hour: Int

        public init(date: LocalDate, hour: Int) {
            self.date = date
            self.hour = hour
        }
    }

    /// The first local day kept on `today`: `today − fullHistoryDays` (older buckets are pruned).
    public static func firstKeptDay(today: LocalDate) -> LocalDate { today.adding(days: -fullHistoryDays) }

    /// The signed ml each bucket gains from `amounts` (`loggedAt` ms since the epoch, `ml`
    /// signed: + for an entry version that appeared, − for one that disappeared), bucketed in
    /// `clock`'s zone. Buckets before `firstKeptDay(today:)` and buckets whose sum is 0 are
    /// left out. An autumn-repeat hour is one bucket (both passes show the same wall hour).
    public static func changes(
        _ amounts: some Sequence<(loggedAt: Int64, ml: Int)>, clock: ZoneClock, today: LocalDate
    ) -> [Bucket: Int] {
        let first = firstKeptDay(today: today)
        var out: [Bucket: Int] = [:]
        for a in amounts where a.ml != 0 {
            let date = clock.localDate(of: a.loggedAt)
            guard !(date < first) else { continue }
            out[Bucket(date: date, hour: clock.wallMinuteOfDay(at: a.loggedAt) / 60), default: 0] += a.ml
        }
        return out.filter { $0.value != 0 }
    }

    /// The history the schedule uses on `today`: the stored buckets of the complete days
    /// `firstKeptDay(today:) … today − 1` summed per hour; `days` counts from the earliest of
    /// those days that has a bucket to yesterday (0 without one). Today's buckets, later ones
    /// and out-of-range hours are ignored; negative sums count 0.
    public init(buckets: some Sequence<(bucket: Bucket, ml: Int)>, today: LocalDate) {
        let first = Self.firstKeptDay(today: today)
        var totals = Array(repeating: 0, count: 24)
        var earliest: LocalDate?
        for b in buckets {
            guard !(b.bucket.date < first), b.bucket.date < today, (0..<24).contains(b.bucket.hour) else { continue }
            totals[b.bucket.hour] += b.ml
            if earliest.map({ b.bucket.date < $0 }) ?? true { earliest = b.bucket.date }
        }
        self.init(totalsMl: totals, days: earliest.map { today.dayNumber - $0.dayNumber } ?? 0)
    }
}
