/// What `summary` needs about one local day, read in one go (spec §4 summary): a bounded
/// number of rows whatever the day's size.
public struct DaySummaryData: Sendable {
    /// The day's ≤ 3 newest live entries, newest first (loggedAt desc, id desc).
    public var lastEntries: [WaterEntry]
    /// The sum of the day's live entries (ml).
    public var totalMl: Int
    /// The number of the day's live entries.
    public var entriesCount: Int
    /// The last ≤ 3 distinct amounts among the user's entries up to the end of the day,
    /// newest first (ml).
    public var recentAmountsMl: [Int]
    /// The day's context, or nil.
    public var context: DayContextContent?
    /// The user's achievements (for `currentStreakDays`).
    public var achievements: Achievements

    public init(
        lastEntries: [WaterEntry], totalMl: Int, entriesCount: Int, recentAmountsMl: [Int], context: DayContextContent?,
        achievements: Achievements
    ) {
        self.lastEntries = lastEntries
        self.totalMl = totalMl
        self.entriesCount = entriesCount
        self.recentAmountsMl = recentAmountsMl
        self.context = context
        self.achievements = achievements
    }
}

/// Days, per-day totals and achievements (`water_logs/{uid}/days`, `achievements/{uid}`).
public protocol HydrationRepository: Sendable {
    /// Stores the context of local day `date` (replacing it) and updates that day's goal,
    /// streaks and badges in the same transaction. Returns the day and whether it is new.
    /// - Throws: `RepositoryError.notFound` (no such user).
    func putDay(
        userID: String, date: LocalDate, content: DayContextContent, deviceID: String?,
        now: Int64
    ) throws -> (day: DayContext, created: Bool)
    /// Local day `date`, whose range in the profile's zone is `range` (ms, `[start, end)`): its
    /// totals (the per-day row), its newest entries, the recent amounts, context and
    /// achievements — a bounded number of indexed rows whatever the day's size.
    func daySummary(userID: String, date: LocalDate, range: Range<Int64>) throws -> DaySummaryData
    /// Per-day totals and contexts of `[from, to]` (local dates), read by index.
    func dayFigures(userID: String, from: LocalDate, to: LocalDate) throws
        -> (totals: [LocalDate: DayTotal], contexts: [LocalDate: DayContextContent])
    /// The user's achievements (all zero before the first entry).
    func achievements(userID: String) throws -> Achievements
}

/// The outcome of creating a bill.
public enum BillCreateOutcome: Sendable, Equatable {
    /// 201.
    case created(Bill)
    /// The same id with identical content (200).
    case existing(Bill)
}

/// A keyset position in the bills list (period desc, id desc).
public struct BillCursor: Sendable, Equatable {
    /// The last row's period.
    public var period: YearMonth
    /// The last row's id.
    public var id: String

    public init(period: YearMonth, id: String) {
        self.period = period
        self.id = id
    }
}

/// Water bills (`invoices/{uid}/bills`, spec §4).
public protocol BillRepository: Sendable {
    /// Creates a bill stamped `now`.
    /// - Throws: `.conflict(code: "bill_exists")` (another live bill has the same provider,
    ///   subscriberNo and period), `.conflict(code: "bill_id_exists")` (same id, other content),
    ///   `.conflict(code: "bill_deleted")`, `.notFound` (no such user).
    func createBill(userID: String, id: String, content: BillContent, deviceID: String?, now: Int64) throws -> BillCreateOutcome
    /// The live bill, or nil.
    func bill(userID: String, id: String) throws -> Bill?
    /// Applies `transform` in one write transaction; `precondition` false → `.preconditionFailed`.
    /// - Throws: `.notFound`, `.preconditionFailed`, `.conflict(code: "bill_exists")`, or what `transform` throws.
    func updateBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool,
        _ transform: @escaping @Sendable (BillContent) throws -> BillContent
    ) throws -> Bill
    /// Turns the live bill into a tombstone.
    /// - Throws: `.notFound`, `.preconditionFailed`.
    func deleteBill(
        userID: String, id: String, deviceID: String?, now: Int64,
        precondition: @escaping @Sendable (Bill) -> Bool) throws
    /// Live bills by period desc, id desc, strictly after `cursor`; at most `limit`.
    func listBills(userID: String, after cursor: BillCursor?, limit: Int) throws -> [Bill]
    /// The live bill of one subscription for `period`, or nil.
    func bill(userID: String, provider: String, subscriberNo: String, period: YearMonth) throws -> Bill?
    /// The subscription's newest live bills (period desc), at most `limit`.
    func latestBills(userID: String, provider: String, subscriberNo: String, limit: Int) throws -> [Bill]
    /// Unpaid live bills with `dueDate ≤ through`, soonest first (dueDate, period, id).
    func unpaidBills(userID: String, dueThrough: LocalDate) throws -> [Bill]
}

/// Everything of one user (spec §4 export): `{profile, waterEntries, days, bills, achievements}`.
public struct AccountExport: Sendable {
    /// `users/{uid}`.
    public var profile: UserProfile
    /// Live entries, oldest first.
    public var entries: [WaterEntry]
    /// Day contexts, oldest first.
    public var days: [DayContext]
    /// Live bills, period desc.
    public var bills: [Bill]
    /// `achievements/{uid}`.
    public var achievements: Achievements
    /// The Sign in with Apple identities linked to the account (never their tokens).
    public var appleIdentities: [LinkedAppleIdentity]

    public init(
        profile: UserProfile, entries: [WaterEntry], days: [DayContext], bills: [Bill], achievements: Achievements,
        appleIdentities: [LinkedAppleIdentity] = []
    ) {
        self.profile = profile
        self.entries = entries
        self.days = days
        self.bills = bills
        self.achievements = achievements
        self.appleIdentities = appleIdentities
    }
}

/// A Sign in with Apple identity as the export lists it: whether a refresh token is kept, never the token.
public struct LinkedAppleIdentity: Sendable, Equatable {
    /// Apple's user id for this team (`sub`).
    public var sub: String
    /// The client id of the kept refresh token (bundle id or Services ID), or nil.
    public var clientID: String?
    /// When it was linked, ms since the epoch.
    public var linkedAt: Int64
    /// True when a sealed refresh token is kept (so deletion revokes it at Apple).
    public var refreshTokenKept: Bool

    /// An identity as stored.
    public init(sub: String, clientID: String?, linkedAt: Int64, refreshTokenKept: Bool) {
        self.sub = sub
        self.clientID = clientID
        self.linkedAt = linkedAt
        self.refreshTokenKept = refreshTokenKept
    }
}

/// Account export and erasure (KVKK/GDPR, App Store 5.1.1(v)).
public protocol AccountDataRepository: Sendable {
    /// All of the user's data read in one transaction, or nil for an unknown user.
    func exportAccount(userID: String) throws -> AccountExport?
    /// Erases the user and everything of theirs (entries and tombstones, days, totals,
    /// bills, achievements, sessions, refresh tokens) in one transaction, and records the
    /// id (no personal data) so tokens are refused after a restart. False for an unknown user.
    func eraseAccount(userID: String, now: Int64) throws -> Bool
    /// Ids of accounts erased at or after `since` (ms) — to rebuild the revocation view.
    func accountsErased(since: Int64) throws -> [String]
}
