import SuplashDomain
import SuplashJSON

/// JSON shapes of the domain documents (spec §4: days, summary, stats, bills, comparison,
/// estimate, achievements, export).
enum DomainPresenter {
    static func int(_ v: Int) -> JSONValue { .number(JSONNumber(v)) }
    static func int(_ v: Int64) -> JSONValue { .number(JSONNumber(v)) }
    /// A thousandths value (m³ × 1000) as an exact decimal number: `12.5`.
    static func m3(_ milli: Int64) -> JSONValue {
        .number(JSONNumber(text: BillRules.decimalText(milli: milli)) ?? JSONNumber(Double(milli) / 1000))
    }

    static func double(_ d: Double) -> JSONValue { .number(JSONNumber(d)) }

    /// `water_logs/{uid}/days/{date}` with the day's goal (ml).
    static func day(_ d: DayContext, goalMl: Int) -> JSONValue {
        .object([
            ("date", .string(d.date.description)),
            ("maxTemperatureC", d.content.maxTemperatureC.map(double) ?? .null),
            ("activeMinutes", d.content.activeMinutes.map { int($0) } ?? .null),
            ("goalMl", int(goalMl)),
            ("createdAt", Presenter.time(d.createdAt)),
            ("updatedAt", Presenter.time(d.updatedAt)),
            ("version", int(d.version)),
        ])
    }

    /// A day document inside an export (no computed goal).
    static func day(_ d: DayContext) -> JSONValue {
        .object([
            ("date", .string(d.date.description)),
            ("maxTemperatureC", d.content.maxTemperatureC.map(double) ?? .null),
            ("activeMinutes", d.content.activeMinutes.map { int($0) } ?? .null),
            ("createdAt", Presenter.time(d.createdAt)),
            ("updatedAt", Presenter.time(d.updatedAt)),
            ("version", int(d.version)),
        ])
    }

    /// `achievements/{uid}` on local day `today`.
    static func achievements(_ a: Achievements, today: LocalDate) -> JSONValue {
        .object([
            ("currentStreakDays", int(a.currentStreakDays(today: today))),
            ("longestStreakDays", int(a.longestStreakDays)),
            ("totalMl", int(a.totalMl)),
            ("daysGoalMet", int(a.daysGoalMet)),
            (
                "badges",
                .array(
                    a.badges.map {
                        .object([("id", .string($0.badge.rawValue)), ("earnedAt", Presenter.time($0.earnedAt))])
                    })
            ),
            ("updatedAt", a.version > 0 ? Presenter.time(a.updatedAt) : .null),
            ("version", int(a.version)),
        ])
    }

    /// `invoices/{uid}/bills/{billId}`; `masked` hides all but the last 3 characters of
    /// `subscriberNo` (admin views).
    static func bill(_ b: Bill, today: LocalDate, masked: Bool) -> JSONValue {
        let c = b.content
        return .object([
            ("id", .string(b.id)),
            ("provider", .string(c.provider)),
            ("subscriberNo", .string(masked ? BillRules.maskSubscriberNo(c.subscriberNo) : c.subscriberNo)),
            ("period", .string(c.period.description)),
            ("consumptionM3", m3(c.consumptionMilliM3)),
            ("amountMinor", int(c.amountMinor)),
            ("currency", .string(c.currency)),
            ("dueDate", .string(c.dueDate.description)),
            ("paidAt", c.paidAt.map(Presenter.time) ?? .null),
            ("status", .string(BillStatus(c, today: today).rawValue)),
            ("createdAt", Presenter.time(b.createdAt)),
            ("updatedAt", Presenter.time(b.updatedAt)),
            ("version", int(b.version)),
        ])
    }

    static func delta(_ d: BillDelta?) -> JSONValue {
        guard let d else { return .null }
        return .object([
            ("period", .string(d.period.description)),
            ("consumptionM3", m3(d.consumptionMilliM3)),
            ("amountMinor", int(d.amountMinor)),
            ("deltaM3", m3(d.deltaMilliM3)),
            ("deltaPercent", d.deltaPercent.map(double) ?? .null),
        ])
    }

    static func comparison(_ c: BillComparison, billID: String, period: YearMonth) -> JSONValue {
        .object([
            ("billId", .string(billID)),
            ("period", .string(period.description)),
            ("previousMonth", delta(c.previousMonth)),
            ("sameMonthLastYear", delta(c.sameMonthLastYear)),
            ("suggestions", .array(c.suggestions.map(JSONValue.string))),
        ])
    }

    static func tariff(_ t: Tariff) -> JSONValue {
        .object([
            ("id", .string(t.id)),
            ("provider", .string(t.provider)),
            ("validFrom", .string(t.validFrom.description)),
            (
                "tiers",
                .array(
                    t.tiers.map {
                        .object([("upToM3", $0.upToMilliM3.map(m3) ?? .null), ("unitPriceMinor", int($0.unitPriceMinor))])
                    })
            ),
        ])
    }

    static func estimate(_ e: BillEstimate, provider: String, subscriberNo: String, month: YearMonth, basedOn: Int) -> JSONValue {
        .object([
            ("provider", .string(provider)),
            ("subscriberNo", .string(subscriberNo)),
            ("period", .string(month.description)),
            ("estimatedM3", m3(e.estimatedMilliM3)),
            ("estimatedAmountMinor", int(e.estimatedAmountMinor)),
            ("currency", .string("TRY")),
            ("basedOnBills", int(basedOn)),
            ("tariff", tariff(e.tariff)),
        ])
    }

    static func bucket(_ b: StatsBucket) -> JSONValue {
        .object([
            ("start", .string(b.start.description)),
            ("totalMl", int(b.totalMl)),
            ("goalMl", int(b.goalMl)),
            ("daysGoalMet", int(b.daysGoalMet)),
            ("entriesCount", int(b.entriesCount)),
        ])
    }
}
