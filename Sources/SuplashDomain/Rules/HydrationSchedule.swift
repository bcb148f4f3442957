/// What a reminder is about (spec §9 `recent[].kind`).
public enum ReminderKind: String, Sendable, CaseIterable {
    case hydration, bill, campaign
}

/// What became of a reminder (spec §9 `recent[].outcome`).
public enum ReminderOutcome: String, Sendable, CaseIterable {
    case acted, snoozed, dismissed, opened, ignored, cancelled, pending

    /// True for the outcomes in which the user did something with the notification
    /// (`:drink`, `:snooze`, `:dismiss`, `:open`); any of them ends an ignored streak.
    public var isUserAction: Bool {
        switch self {
        case .acted, .snoozed, .dismissed, .opened: true
        case .ignored, .cancelled, .pending: false
        }
    }
}

/// One reminder of the user's recent history, as the store keeps it. Instants in ms.
public struct ReminderRecord: Sendable, Equatable {
    /// The reminder id.
    public var id: String
    /// Hydration, bill or campaign.
    public var kind: ReminderKind
    /// When it was due.
    public var dueAt: Int64
    /// When it was handed to the push outbox, or nil while pending or when cancelled.
    public var sentAt: Int64?
    /// What became of it so far.
    public var outcome: ReminderOutcome

    /// A history record; instants in ms since the epoch.
    public init(id: String, kind: ReminderKind, dueAt: Int64, sentAt: Int64?, outcome: ReminderOutcome) {
        self.id = id
        self.kind = kind
        self.dueAt = dueAt
        self.sentAt = sentAt
        self.outcome = outcome
    }
}

/// One water entry as the schedule needs it: when it was drunk and how much.
public struct IntakeEvent: Sendable, Equatable {
    /// The entry's `loggedAt`, ms since the epoch.
    public var loggedAt: Int64
    /// Millilitres.
    public var amountMl: Int

    /// An entry drunk at `loggedAt` (ms) of `amountMl` ml.
    public init(loggedAt: Int64, amountMl: Int) {
        self.loggedAt = loggedAt
        self.amountMl = amountMl
    }
}

/// The user's drinking by local hour of day over recent days (the store keeps these per-hour
/// totals up to date on every entry write; issue "smart reminders").
public struct HourlyDrinking: Sendable, Equatable {
    /// 24 totals in ml; index = local hour (0 = 00:00–00:59).
    public var totalsMl: [Int]
    /// How many days the totals cover, 0–14.
    public var days: Int

    /// Days of history at which the user's own pattern gets its full weight.
    public static let fullHistoryDays = 14

    /// - Parameters: `totalsMl` with 24 values (missing hours count 0, extra ones are ignored).
    public init(totalsMl: [Int], days: Int) {
        self.totalsMl = (0..<24).map { $0 < totalsMl.count ? max(0, totalsMl[$0]) : 0 }
        self.days = max(0, days)
    }

    /// No history: the expected curve is uniform.
    public static let none = HourlyDrinking(totalsMl: [], days: 0)

    /// Relative weight of each local hour (average 1): a blend of the user's share of
    /// drinking in that hour and a uniform share. The user's pattern counts 80 % after
    /// `fullHistoryDays` days and proportionally less with fewer days; without history
    /// every hour weighs 1.
    public var hourWeights: [Double] {
        let sum = totalsMl.reduce(0, +)
        guard sum > 0, days > 0 else { return Array(repeating: 1, count: 24) }
        let own = 0.8 * Double(min(days, Self.fullHistoryDays)) / Double(Self.fullHistoryDays)
        return totalsMl.map { (1 - own) + own * 24 * Double($0) / Double(sum) }
    }
}

/// The expected cumulative intake over a waking window: the day's goal spread over
/// `start…end`, each instant weighted by its wall-clock hour (`HourlyDrinking.hourWeights`).
/// Piecewise linear and non-decreasing, 0 at `start`, the goal at `end`. DST days are
/// handled by walking real instants: a skipped hour is absent, a repeated hour counts twice.
public struct ExpectedCurve: Sendable {
    struct Segment: Sendable {
        var start: Int64
        var end: Int64
        /// Expected ml at `start`.
        var base: Double
        /// ml per ms.
        var rate: Double
    }

    let segments: [Segment]
    /// The day's goal, ml.
    public let goalMl: Int
    let start: Int64
    let end: Int64

    /// The curve of `window` for a goal of `goalMl` ml.
    public init(window: WakingWindow, goalMl: Int, hourly: HourlyDrinking, clock: ZoneClock) {
        let weights = hourly.hourWeights
        var pieces: [(Int64, Int64, Double)] = []  // start, end, weight per ms
        pieces.reserveCapacity(28)
        var t = window.start
        var span = clock.offsetSpan(at: t)
        while t < window.end {
            if !span.range.contains(t) { span = clock.offsetSpan(at: t) }
            let offset = Int64(span.offsetSeconds) * 1000
            let wall = t + offset
            let hour = Int(floorMod(floorDiv(wall, 3_600_000), 24))
            var next = min(window.end, t + (3_600_000 - floorMod(wall, 3_600_000)))
            if !span.range.contains(next - 1), Int64(clock.offsetSeconds(at: next - 1)) * 1000 != offset {
                // An offset change inside this hour: stop at the transition.
                var lo = t
                var hi = next - 1
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2
                    if Int64(clock.offsetSeconds(at: mid)) * 1000 == offset { lo = mid } else { hi = mid }
                }
                next = hi
            }
            pieces.append((t, next, weights[hour]))
            t = next
        }
        let total = pieces.reduce(0.0) { $0 + Double($1.1 - $1.0) * $1.2 }
        var segments: [Segment] = []
        segments.reserveCapacity(pieces.count)
        var cumulative = 0.0
        for (s, e, w) in pieces {
            let rate = total > 0 ? Double(goalMl) * w / total : 0
            segments.append(Segment(start: s, end: e, base: cumulative, rate: rate))
            cumulative += rate * Double(e - s)
        }
        self.segments = segments
        self.goalMl = goalMl
        self.start = window.start
        self.end = window.end
    }

    /// Expected ml by instant `t`: 0 before the window, the goal after it.
    public func expectedMl(at t: Int64) -> Double {
        if t <= start { return 0 }
        if t >= end { return Double(goalMl) }
        for s in segments where t < s.end {
            return s.base + s.rate * Double(t - s.start)
        }
        return Double(goalMl)
    }

    /// The last instant at which the curve is still at or below `ml` — from then on a user
    /// who has drunk `ml` is behind. `start` when `ml` ≤ 0 and the curve rises at once;
    /// nil when `ml` reaches the goal (never behind).
    public func crossing(ml: Double) -> Int64? {
        guard ml < Double(goalMl) else { return nil }
        for s in segments where s.rate > 0 && s.base + s.rate * Double(s.end - s.start) > ml {
            let into = max(0, (ml - s.base) / s.rate)
            return s.start + Int64(into.rounded(.up))
        }
        return nil
    }
}

/// Why the plan is what it is (docs/reminders.md).
public enum HydrationPlanReason: String, Sendable {
    /// `reminders.enabled` is false.
    case disabled
    /// The awake period is too short for a window (under 90 min).
    case emptyWindow
    /// Today's logged total reached the goal.
    case goalMet
    /// `maxPerDay` reminders were already sent this reminder day.
    case maxPerDayReached
    /// The next allowed instant falls after the window's end (or only in quiet hours).
    case windowClosed
    /// Adaptive, on track: due when the curve overtakes the logged total.
    case onTrack
    /// Adaptive, behind the curve: due as soon as the gap and quiet hours allow.
    case behind
    /// Fixed mode: the next `intervalMinutes` slot.
    case fixedInterval
}

/// A hydration reminder to send.
public struct PlannedHydrationReminder: Sendable, Equatable {
    /// When to send it, ms since the epoch.
    public var dueAt: Int64
    /// A cup size from the profile, ml.
    public var suggestedAmountMl: Int

    /// A reminder due at `dueAt` (ms) suggesting `suggestedAmountMl` ml.
    public init(dueAt: Int64, suggestedAmountMl: Int) {
        self.dueAt = dueAt
        self.suggestedAmountMl = suggestedAmountMl
    }
}

/// The outcome of `HydrationSchedule.plan`.
public struct HydrationPlan: Sendable, Equatable {
    /// The next reminder, or nil.
    public var reminder: PlannedHydrationReminder?
    /// Why there is this reminder, or none.
    public var reason: HydrationPlanReason
    /// The reminder day the plan is for.
    public var day: LocalDate
    /// Logged on that reminder day so far, ml.
    public var loggedMl: Int
    /// The day's goal, ml.
    public var goalMl: Int
    /// With no reminder: when to plan again without any write (the window's end, from which
    /// on `WakingWindow.current` gives the next day); nil when only a write can change it.
    public var recheckAt: Int64?
    /// True when three or more reminders in a row were ignored and the gap was doubled.
    public var gapDoubled: Bool
}

/// Everything `HydrationSchedule.plan` reads. Instants in ms since the epoch.
public struct HydrationScheduleInput: Sendable {
    /// The reminder day (`WakingWindow.current(at: now, …)`).
    public var window: WakingWindow
    /// The profile's zone.
    public var clock: ZoneClock
    /// The profile's `reminders`.
    public var settings: ReminderSettings
    /// The profile's `cupSizesMl` (1–8 values).
    public var cupSizesMl: [Int]
    /// The goal of `window.day`, heat and activity included (`HydrationRules.dayGoalMl`).
    public var goalMl: Int
    /// Water entries; those with `loggedAt` in `window.dayStart ..< window.countEnd` count.
    public var intake: [IntakeEvent]
    /// When the user last wrote a water entry (any device), or nil.
    public var lastIntakeWrittenAt: Int64?
    /// Per-hour drinking of the last 14 days.
    public var hourly: HourlyDrinking
    /// Recent reminders of every kind (the store's last 50 are plenty).
    public var history: [ReminderRecord]
    /// The current instant.
    public var now: Int64

    /// Every input; see the properties.
    public init(
        window: WakingWindow, clock: ZoneClock, settings: ReminderSettings, cupSizesMl: [Int], goalMl: Int,
        intake: [IntakeEvent], lastIntakeWrittenAt: Int64?, hourly: HourlyDrinking, history: [ReminderRecord],
        now: Int64
    ) {
        self.window = window
        self.clock = clock
        self.settings = settings
        self.cupSizesMl = cupSizesMl
        self.goalMl = goalMl
        self.intake = intake
        self.lastIntakeWrittenAt = lastIntakeWrittenAt
        self.hourly = hourly
        self.history = history
        self.now = now
    }
}

/// The hydration reminder schedule (spec §9, docs/reminders.md): pure, no clock reads.
public enum HydrationSchedule {
    /// Ignored reminders in a row after which the minimum gap doubles.
    public static let ignoredStreakForSlowdown = 3

    /// The next hydration reminder for `input`, or none with the reason.
    public static func plan(_ input: HydrationScheduleInput) -> HydrationPlan {
        let w = input.window
        let logged = input.intake.reduce(0) { sum, e in
            (w.dayStart..<w.countEnd).contains(e.loggedAt) ? sum + max(0, e.amountMl) : sum
        }
        var plan = HydrationPlan(
            reminder: nil, reason: .disabled, day: w.day, loggedMl: logged, goalMl: input.goalMl,
            recheckAt: nil, gapDoubled: false)
        guard input.settings.enabled else { return plan }
        guard !w.isEmpty else {
            plan.reason = .emptyWindow
            return plan
        }
        plan.recheckAt = w.end
        if logged >= input.goalMl {
            plan.reason = .goalMet
            return plan
        }
        let sent = input.history.filter { $0.kind == .hydration && $0.sentAt != nil && $0.outcome != .cancelled }
        let sentToday = sent.filter { (w.dayStart..<w.countEnd).contains($0.sentAt ?? 0) }.count
        if sentToday >= input.settings.maxPerDay {
            plan.reason = .maxPerDayReached
            return plan
        }
        let streak = ignoredStreak(history: input.history, lastIntakeWrittenAt: input.lastIntakeWrittenAt)
        plan.gapDoubled = streak >= ignoredStreakForSlowdown
        let interval = Int64(input.settings.intervalMinutes) * 60_000
        let gap = plan.gapDoubled ? 2 * interval : interval
        var earliest = max(input.now, w.start)
        if let last = sent.map(gapReference).max() { earliest = max(earliest, last + gap) }

        let curve = ExpectedCurve(window: w, goalMl: input.goalMl, hourly: input.hourly, clock: input.clock)
        let quiet = input.settings.quietHours
        var due: Int64
        switch input.settings.mode {
        case .adaptive:
            let behind = curve.expectedMl(at: max(input.now, w.start)) > Double(logged)
            plan.reason = behind ? .behind : .onTrack
            due = max(earliest, roundUpToMinute(curve.crossing(ml: Double(logged)) ?? w.end))
            if let quiet { due = quiet.firstAllowedInstant(atOrAfter: due, clock: input.clock) }
        case .fixed:
            plan.reason = .fixedInterval
            due = fixedSlot(atOrAfter: earliest, start: w.start, interval: interval)
            // Slots in quiet hours are skipped: the first slot after the quiet period's end.
            var steps = 0
            while let quiet, due <= w.end, quiet.contains(minuteOfDay: input.clock.wallMinuteOfDay(at: due)) {
                steps += 1
                if steps > 48 {
                    due = w.end + 1
                    break
                }
                due = fixedSlot(
                    atOrAfter: quiet.firstAllowedInstant(atOrAfter: due, clock: input.clock),
                    start: w.start, interval: interval)
            }
        }
        guard due <= w.end else {
            plan.reason = .windowClosed
            return plan
        }
        // Enough to keep up with the curve until the next reminder could come, and at least an
        // even share of what is left over the reminders still possible today.
        let curveGap = curve.expectedMl(at: min(due + interval, w.end)) - Double(logged)
        let remaining = max(1, min(input.settings.maxPerDay - sentToday, Int((w.end - due) / gap) + 1))
        let target = max(curveGap, Double(input.goalMl - logged) / Double(remaining))
        plan.reminder = PlannedHydrationReminder(dueAt: due, suggestedAmountMl: suggestedAmount(gapMl: target, cupSizesMl: input.cupSizesMl))
        plan.recheckAt = nil
        return plan
    }

    /// Trailing hydration reminders, newest first, that were sent and ignored: no action on
    /// the reminder and no water entry written between it and the next one (for the newest:
    /// between it and now). Any action or a water write ends the streak.
    public static func ignoredStreak(history: [ReminderRecord], lastIntakeWrittenAt: Int64?) -> Int {
        let sent = history.filter { $0.kind == .hydration && $0.sentAt != nil && $0.outcome != .cancelled }
            .sorted { ($0.sentAt ?? 0) > ($1.sentAt ?? 0) }
        var count = 0
        for r in sent {
            if r.outcome.isUserAction { break }
            if let written = lastIntakeWrittenAt, let sentAt = r.sentAt, written >= sentAt { break }
            count += 1
        }
        return count
    }

    /// A sent reminder's delivery may lag its due time by more than this before gaps are
    /// measured from the delivery instead of the due time, ms.
    public static let deliveryTolerance: Int64 = 120_000

    /// The instant the minimum gap is measured from: the reminder's `dueAt` when it was sent
    /// within `deliveryTolerance` of it (so fixed slots stay on their lattice and a few seconds
    /// of delivery latency do not push the next reminder), else its `sentAt`.
    public static func gapReference(_ r: ReminderRecord) -> Int64 {
        guard let sentAt = r.sentAt else { return r.dueAt }
        return sentAt - r.dueAt <= deliveryTolerance ? r.dueAt : sentAt
    }

    /// The smallest cup size that covers `gapMl`, else the largest cup size. Sizes ≤ 0 are
    /// ignored; with no usable size, 250 ml.
    public static func suggestedAmount(gapMl: Double, cupSizesMl: [Int]) -> Int {
        let cups = cupSizesMl.filter { $0 > 0 }.sorted()
        guard let largest = cups.last else { return 250 }
        return cups.first { Double($0) >= gapMl } ?? largest
    }

    static func fixedSlot(atOrAfter t: Int64, start: Int64, interval: Int64) -> Int64 {
        guard t > start else { return start }
        return start + (t - start + interval - 1) / interval * interval
    }

    static func roundUpToMinute(_ t: Int64) -> Int64 {
        let r = floorMod(t, 60_000)
        return r == 0 ? t : t + 60_000 - r
    }
}
