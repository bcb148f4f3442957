/// The writable content of `invoices/{uid}/bills/{billId}` (spec §4 bills table).
public struct BillContent: Sendable, Equatable {
    /// Upper-case provider code, 2–16 characters (`ISKI`, `ASKI`, `IZSU`).
    public var provider: String
    /// The subscription number, 1–32 characters. Personal data: never logged, masked
    /// outside the owner's own documents (`BillRules.maskSubscriberNo`).
    public var subscriberNo: String
    /// The billed month.
    public var period: YearMonth
    /// Consumption in thousandths of a m³ (litres), 0…100 000 000 — exact for the ≤ 3
    /// decimals the API accepts.
    public var consumptionMilliM3: Int64
    /// Amount in minor units of `currency` (kuruş for TRY), ≥ 0.
    public var amountMinor: Int64
    /// ISO 4217 code, default `TRY`.
    public var currency: String
    /// Local due date.
    public var dueDate: LocalDate
    /// ms since the epoch, or nil while unpaid.
    public var paidAt: Int64?

    public init(
        provider: String, subscriberNo: String, period: YearMonth, consumptionMilliM3: Int64, amountMinor: Int64,
        currency: String = "TRY", dueDate: LocalDate, paidAt: Int64? = nil
    ) {
        self.provider = provider
        self.subscriberNo = subscriberNo
        self.period = period
        self.consumptionMilliM3 = consumptionMilliM3
        self.amountMinor = amountMinor
        self.currency = currency
        self.dueDate = dueDate
        self.paidAt = paidAt
    }
}

/// Computed bill status (spec §4): `paid` when `paidAt` is set, `overdue` when unpaid
/// and `dueDate` is before the user's local today, else `unpaid`.
public enum BillStatus: String, Sendable {
    case paid, overdue, unpaid

    /// The status of `content` on the user's local day `today`.
    public init(_ content: BillContent, today: LocalDate) {
        if content.paidAt != nil {
            self = .paid
        } else if content.dueDate < today {
            self = .overdue
        } else {
            self = .unpaid
        }
    }
}

/// A stored bill. Times are ms since the epoch.
public struct Bill: Sendable, Equatable {
    /// Lower-case UUID, unique per user.
    public var id: String
    /// The owner.
    public var userID: String
    /// The writable fields.
    public var content: BillContent
    /// ms since the epoch.
    public var createdAt: Int64
    /// ms since the epoch.
    public var updatedAt: Int64
    /// Starts at 1, +1 per write (a delete too).
    public var version: Int64

    public init(id: String, userID: String, content: BillContent, createdAt: Int64, updatedAt: Int64, version: Int64) {
        self.id = id
        self.userID = userID
        self.content = content
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }
}
