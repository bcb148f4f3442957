/// One entry version's effect on its local day's total (spec §4 achievements, §6):
/// `amountMl` and `count` are signed — + for a created entry or the new version of an
/// updated one, − for a deleted entry or the old version.
public struct EntryDelta: Sendable, Equatable {
    /// ms since the epoch.
    public var loggedAt: Int64
    /// Signed ml.
    public var amountMl: Int
    /// +1 or −1.
    public var count: Int
    public var source: EntrySource
    /// The entry's id, when the writer passes it (it orders entries logged at the same instant
    /// for the distinct amounts the store keeps); nil: unknown.
    public var id: String?

    /// The entry `content` (id `id`, when known) appearing (`sign` +1) or disappearing (−1).
    public init(_ content: WaterEntryContent, sign: Int, id: String? = nil) {
        loggedAt = content.loggedAt
        amountMl = sign * content.amountMl
        count = sign
        source = content.source
        self.id = id
    }
}

/// Pure arithmetic of the `daily_totals` kept by every store adapter, so SQLite and
/// PostgreSQL apply entry writes the same way: a day's new total is its stored total plus
/// the deltas that fall on it (O(1) per day, never a re-read of the day's entries).
public enum DailyTotals {
    /// The deltas summed per local day of `clock` (ml, entry count).
    public static func byDay(_ deltas: [EntryDelta], clock: ZoneClock) -> [LocalDate: (ml: Int, count: Int)] {
        var out: [LocalDate: (ml: Int, count: Int)] = [:]
        for d in deltas {
            let day = clock.localDate(of: d.loggedAt)
            let t = out[day] ?? (0, 0)
            out[day] = (t.ml + d.amountMl, t.count + d.count)
        }
        return out
    }

    /// True when a watch entry was written (the `watch_first_log` badge).
    public static func watchWritten(_ deltas: [EntryDelta]) -> Bool {
        deltas.contains { $0.count > 0 && $0.source == .watch }
    }

    /// A day's stored (total ml, count) after a delta; never negative.
    public static func apply(total: Int, count: Int, delta: (ml: Int, count: Int)) -> (total: Int, count: Int) {
        (max(0, total + delta.ml), max(0, count + delta.count))
    }
}
