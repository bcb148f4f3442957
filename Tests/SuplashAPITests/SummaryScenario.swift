// Shared by SuplashAPITests and SuplashPostgresTests (the file in SuplashPostgresTests is a
// symbolic link to this one): one scenario and one recomputation for both stores.
import SuplashDomain
import SuplashStoreCore

/// A seeded sequence of entry writes of one user — creates, backdated and other-day creates,
/// edits of amount, time and note, deletes (often of the newest entry), batches and sync pushes
/// of upserts and deletes — over a week of local days.
struct SummaryScenario {
    let uid: String
    let t0: Int64
    let clock: ZoneClock
    var seed: UInt64
    var live: [String: WaterEntryContent] = [:]
    var next = 0
    var steps = 0
    var counts: [String: Int] = [:]
    let amounts = [100, 200, 250, 300, 500, 750]

    init(uid: String, t0: Int64, clock: ZoneClock, seed: UInt64) {
        self.uid = uid
        self.t0 = t0
        self.clock = clock
        self.seed = seed
    }

    var day0: LocalDate { clock.localDate(of: t0) }

    /// The summary of `date` as `store` answers it, as text.
    func summary(_ store: some HydrationRepository, _ date: LocalDate) throws -> String {
        let s = try store.daySummary(userID: uid, date: date, range: clock.dayRange(date))
        return "\(date) total=\(s.totalMl) count=\(s.entriesCount) last=\(s.lastEntries) recent=\(s.recentAmountsMl)"
    }

    /// The summary of `date` recomputed from the user's live entries `entries`, as the summary
    /// computed it when it read the whole day: the day's entries newest first (`logged_at`, then
    /// id bytes, descending), then at most `DayStatements.recentAmountsWindow` entries before the
    /// day for the distinct amounts.
    func expected(_ entries: [WaterEntry], _ date: LocalDate) -> String {
        let live = entries.sorted { a, b in
            a.content.loggedAt != b.content.loggedAt
                ? a.content.loggedAt > b.content.loggedAt : b.id.utf8.lexicographicallyPrecedes(a.id.utf8)
        }
        let range = clock.dayRange(date)
        let day = live.filter { range.contains($0.content.loggedAt) }
        let before = live.filter { $0.content.loggedAt < range.lowerBound }.prefix(DayStatements.recentAmountsWindow)
        var recent: [Int] = []
        for e in day + before where !recent.contains(e.content.amountMl) && recent.count < 3 { recent.append(e.content.amountMl) }
        let total = day.reduce(0) { $0 + $1.content.amountMl }
        return "\(date) total=\(total) count=\(day.count) last=\(Array(day.prefix(3))) recent=\(recent)"
    }

    mutating func random(_ n: Int) -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((seed >> 33) % UInt64(n))
    }

    /// A time on one of the days, on a coarse grid so that times repeat (ties ordered by id).
    mutating func time() -> Int64 {
        clock.dayRange(day0.adding(days: random(7) - 2)).lowerBound + Int64(random(48)) * 1_800_000
    }

    mutating func content() -> WaterEntryContent {
        WaterEntryContent(
            amountMl: amounts[random(amounts.count)], loggedAt: time(), source: .phone, healthKitUUID: nil, note: nil)
    }

    mutating func newID() -> String {
        next += 1
        // Ids in an order unrelated to creation order.
        return String(format: "%08x-0000-7000-8000-%012d", (next &* 2_654_435_761) & 0xffff_ffff, next)
    }

    /// A live entry: the newest one (of the user or of its day) half the time.
    mutating func pick() -> String? {
        guard !live.isEmpty else { return nil }
        let ids = live.keys.sorted()
        if random(2) == 0, let newest = ids.max(by: { (live[$0]?.loggedAt ?? 0, $0) < (live[$1]?.loggedAt ?? 0, $1) }) {
            return newest
        }
        return ids[random(ids.count)]
    }

    mutating func edited(_ c: WaterEntryContent) -> WaterEntryContent {
        var c = c
        switch random(3) {
        case 0: c.amountMl = amounts[random(amounts.count)]
        case 1: c.loggedAt = time()
        default: c.note = "n\(random(100))"
        }
        return c
    }

    /// Runs one write on `store`; returns its name.
    mutating func step(_ store: some WaterEntryRepository & WaterEntryBatchRepository & SyncRepository) throws -> String {
        steps += 1
        let now = t0 + Int64(steps) * 10
        let kind = live.count < 3 ? 0 : random(6)
        let name = ["create", "update", "delete", "batch", "sync", "create"][kind]
        counts[name, default: 0] += 1
        switch kind {
        case 1:
            guard let id = pick(), let c = live[id] else { return name }
            let new = edited(c)
            _ = try store.updateEntry(userID: uid, id: id, deviceID: nil, now: now, precondition: { _ in true }) { _ in new }
            live[id] = new
        case 2:
            guard let id = pick() else { return name }
            try store.deleteEntry(userID: uid, id: id, deviceID: nil, now: now, precondition: { _ in true })
            live[id] = nil
        case 3:
            var items: [(id: String, content: WaterEntryContent)] = []
            for _ in 0..<(1 + random(4)) { items.append((newID(), content())) }
            _ = try store.createEntries(userID: uid, items: items, deviceID: nil, now: now)
            for item in items { live[item.id] = item.content }
        case 4:
            var mutations: [SyncMutation] = []
            var after = live
            for i in 0..<(1 + random(4)) {
                let at = now + Int64(i)
                switch random(3) {
                case 0:
                    let (id, c) = (newID(), content())
                    mutations.append(SyncMutation(collection: "water_entries", id: id, write: .upsertEntry(c), clientUpdatedAt: at))
                    after[id] = c
                case 1:
                    guard let id = pick(), let c = after[id] else { continue }
                    let new = edited(c)
                    mutations.append(SyncMutation(collection: "water_entries", id: id, write: .upsertEntry(new), clientUpdatedAt: at))
                    after[id] = new
                default:
                    guard let id = pick(), after[id] != nil else { continue }
                    mutations.append(SyncMutation(collection: "water_entries", id: id, write: .delete, clientUpdatedAt: at))
                    after[id] = nil
                }
            }
            let outcomes = try store.applyMutations(
                userID: uid, deviceID: "d", now: now, mutations: mutations, profilePatch: { _, p in p }
            ).outcomes
            for o in outcomes {
                guard case .applied = o else { throw ScenarioError.notApplied("\(o)") }
            }
            live = after
        default:
            let (id, c) = (newID(), content())
            _ = try store.createEntry(userID: uid, id: id, content: c, deviceID: nil, now: now)
            live[id] = c
        }
        return name
    }

    enum ScenarioError: Error {
        case notApplied(String)
    }
}
