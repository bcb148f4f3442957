/// A bill compared with one reference bill (spec §4 comparison).
public struct BillDelta: Sendable, Equatable {
    /// The reference bill's period.
    public var period: YearMonth
    /// The reference bill's consumption, thousandths of a m³.
    public var consumptionMilliM3: Int64
    /// The reference bill's amount, minor units.
    public var amountMinor: Int64
    /// Current minus reference, thousandths of a m³.
    public var deltaMilliM3: Int64
    /// `deltaM3 / reference × 100`, rounded to 2 decimals; nil when the reference is 0 m³.
    public var deltaPercent: Double?
}

/// `comparison` of a bill (spec §4).
public struct BillComparison: Sendable, Equatable {
    /// vs the previous month of the same subscription, or nil.
    public var previousMonth: BillDelta?
    /// vs the same month a year earlier, or nil.
    public var sameMonthLastYear: BillDelta?
    /// Suggestion codes, e.g. `possible_leak`, `usage_down`.
    public var suggestions: [String]
}

/// The `estimate` of a subscription's bill for a month (spec §4).
public struct BillEstimate: Sendable, Equatable {
    /// Mean consumption of the latest ≤ 3 bills, thousandths of a m³ (rounded half up).
    public var estimatedMilliM3: Int64
    /// `estimatedMilliM3` priced with `tariff`, minor units.
    public var estimatedAmountMinor: Int64
    /// The tariff in effect on the month's first day.
    public var tariff: Tariff
}

/// Bill rules: comparison, suggestions, estimate, masking (spec §4 bills).
public enum BillRules {
    /// Consumption rose more than this many percent over a reference → `possible_leak`.
    public static let leakThresholdPercent = 30.0
    /// Consumption fell more than this many percent below a reference → `usage_down`.
    public static let downThresholdPercent = 10.0

    /// Compares `bill` with the previous month's and last year's bill of the same subscription.
    public static func compare(_ bill: BillContent, previousMonth: BillContent?, sameMonthLastYear: BillContent?) -> BillComparison {
        let pm = previousMonth.map { delta(bill, $0) }
        let ly = sameMonthLastYear.map { delta(bill, $0) }
        var suggestions: [String] = []
        let percents = [pm, ly].compactMap { $0?.deltaPercent }
        let rises = [pm, ly].compactMap { d -> Bool? in
            guard let d else { return nil }
            // From zero to anything is a rise of "infinite" percent.
            if d.deltaPercent == nil { return d.deltaMilliM3 > 0 }
            return (d.deltaPercent ?? 0) > leakThresholdPercent
        }
        if rises.contains(true) { suggestions.append("possible_leak") }
        if percents.contains(where: { $0 < -downThresholdPercent }) { suggestions.append("usage_down") }
        return BillComparison(previousMonth: pm, sameMonthLastYear: ly, suggestions: suggestions)
    }

    static func delta(_ current: BillContent, _ reference: BillContent) -> BillDelta {
        let d = current.consumptionMilliM3 - reference.consumptionMilliM3
        var percent: Double?
        if reference.consumptionMilliM3 > 0 {
            percent = (Double(d) / Double(reference.consumptionMilliM3) * 10_000).rounded() / 100
        }
        return BillDelta(
            period: reference.period, consumptionMilliM3: reference.consumptionMilliM3,
            amountMinor: reference.amountMinor, deltaMilliM3: d, deltaPercent: percent)
    }

    /// The estimate for the month containing `today`: the mean of `latestBills` (the
    /// subscription's newest ≤ 3, any order) priced with `provider`'s tariff in effect on
    /// that month's first day. Nil without bills or without a tariff in effect.
    public static func estimate(
        latestBills: [BillContent], provider: String, catalog: TariffCatalog,
        today: LocalDate
    ) -> BillEstimate? {
        guard !latestBills.isEmpty,
            let tariff = catalog.tariff(provider: provider, on: today.startOfMonth)
        else { return nil }
        let sum = latestBills.reduce(Int64(0)) { $0 + $1.consumptionMilliM3 }
        let n = Int64(latestBills.count)
        let mean = (2 * sum + n) / (2 * n)
        return BillEstimate(estimatedMilliM3: mean, estimatedAmountMinor: tariff.priceMinor(milliM3: mean), tariff: tariff)
    }

    /// A subscriber number as shown outside the owner's own documents (admin views):
    /// every character but the last 3 replaced by `*`; numbers of ≤ 3 characters fully masked.
    public static func maskSubscriberNo(_ s: String) -> String {
        let chars = Array(s)
        guard chars.count > 3 else { return String(repeating: "*", count: chars.count) }
        return String(repeating: "*", count: chars.count - 3) + String(chars.suffix(3))
    }

    /// `milli` thousandths as decimal text without trailing zeros: 12500 → `12.5`, 20000 → `20`.
    public static func decimalText(milli: Int64) -> String {
        let negative = milli < 0
        let m = milli.magnitude
        var text = String(m / 1000)
        let frac = m % 1000
        if frac != 0 {
            var f = pad(Int(frac), 3)
            while f.hasSuffix("0") { f.removeLast() }
            text += "." + f
        }
        return negative ? "-" + text : text
    }
}
