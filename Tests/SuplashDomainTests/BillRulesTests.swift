import SuplashDomain
import SuplashJSON
import XCTest

/// Bills: validation, comparison, tariffs, masking (spec §4 bills).
final class BillRulesTests: XCTestCase {
    func d(_ s: String) -> LocalDate { LocalDate(parsing: s) ?? LocalDate(dayNumber: 0) }

    func bill(_ period: String, _ milli: Int64, amount: Int64 = 100) -> BillContent {
        BillContent(
            provider: "ISKI", subscriberNo: "1234567", period: YearMonth(parsing: period) ?? LocalDate(dayNumber: 0).yearMonth,
            consumptionMilliM3: milli, amountMinor: amount, dueDate: LocalDate(dayNumber: 0))
    }

    func testComparisonDeltasAndSuggestions() throws {
        let c = BillRules.compare(
            bill("2026-10", 18_000), previousMonth: bill("2026-09", 12_000),
            sameMonthLastYear: bill("2025-10", 10_000))
        XCTAssertEqual(c.previousMonth?.deltaMilliM3, 6000)
        XCTAssertEqual(c.previousMonth?.deltaPercent, 50)
        XCTAssertEqual(c.sameMonthLastYear?.deltaMilliM3, 8000)
        XCTAssertEqual(c.sameMonthLastYear?.deltaPercent, 80)
        XCTAssertEqual(c.suggestions, ["possible_leak"])
        let down = BillRules.compare(bill("2026-10", 8_000), previousMonth: bill("2026-09", 10_000), sameMonthLastYear: nil)
        XCTAssertEqual(down.previousMonth?.deltaPercent, -20)
        XCTAssertEqual(down.suggestions, ["usage_down"])
        let flat = BillRules.compare(bill("2026-10", 10_500), previousMonth: bill("2026-09", 10_000), sameMonthLastYear: nil)
        XCTAssertEqual(flat.suggestions, [])
        let fromZero = BillRules.compare(bill("2026-10", 1_000), previousMonth: bill("2026-09", 0), sameMonthLastYear: nil)
        XCTAssertNil(fromZero.previousMonth?.deltaPercent)
        XCTAssertEqual(fromZero.suggestions, ["possible_leak"])
        let none = BillRules.compare(bill("2026-10", 1_000), previousMonth: nil, sameMonthLastYear: nil)
        XCTAssertNil(none.previousMonth)
        XCTAssertEqual(none.suggestions, [])
    }

    func iski() throws -> Tariff {
        try Tariff(
            json: try json(
                """
                {"id": "iski", "provider": "ISKI", "validFrom": "2025-06-01",
                 "tiers": [{"upToM3": 15, "unitPriceMinor": 4662}, {"upToM3": 30, "unitPriceMinor": 7104},
                           {"upToM3": null, "unitPriceMinor": 10275}]}
                """))
    }

    func testProgressiveTierPricing() throws {
        let t = try iski()
        XCTAssertEqual(t.priceMinor(milliM3: 0), 0)
        XCTAssertEqual(t.priceMinor(milliM3: 10_000), 10 * 4662)
        XCTAssertEqual(t.priceMinor(milliM3: 15_000), 15 * 4662)
        XCTAssertEqual(t.priceMinor(milliM3: 20_000), Int64(15 * 4662 + 5 * 7104))
        let forty: Int64 = 15 * 4662 + 15 * 7104 + 10 * 10275
        XCTAssertEqual(t.priceMinor(milliM3: 40_000), forty)
        XCTAssertEqual(t.priceMinor(milliM3: 12_500), 58_275)  // 12.5 × 4662
        XCTAssertEqual(t.priceMinor(milliM3: 1), 5)  // 4.662 kuruş rounds half up
    }

    func testTariffChoiceByValidFrom() throws {
        let old = try iski()
        var new = old
        new.id = "iski-2026"
        new.validFrom = d("2026-01-01")
        let catalog = try TariffCatalog([new, old])
        XCTAssertEqual(catalog.tariff(provider: "ISKI", on: d("2025-12-01"))?.id, "iski")
        XCTAssertEqual(catalog.tariff(provider: "ISKI", on: d("2026-01-01"))?.id, "iski-2026")
        XCTAssertNil(catalog.tariff(provider: "ISKI", on: d("2025-05-31")))
        XCTAssertNil(catalog.tariff(provider: "ASKI", on: d("2026-05-31")))
        XCTAssertThrowsError(try TariffCatalog([old, old]))
        // Estimates use the tariff in effect on the first day of today's month.
        let e = BillRules.estimate(
            latestBills: [bill("2026-07", 20_000), bill("2026-08", 20_000), bill("2026-09", 20_000)],
            provider: "ISKI", catalog: try TariffCatalog([old]), today: d("2026-10-15"))
        XCTAssertEqual(e?.estimatedMilliM3, 20_000)
        XCTAssertEqual(e?.estimatedAmountMinor, Int64(15 * 4662 + 5 * 7104))
        XCTAssertNil(
            BillRules.estimate(
                latestBills: [], provider: "ISKI", catalog: try TariffCatalog([old]),
                today: d("2026-10-15")))
    }

    func testBadTariffFilesAreRefused() throws {
        XCTAssertThrowsError(
            try Tariff(
                json: try json(
                    #"{"id":"x","provider":"ISKI","validFrom":"2025-06-01","tiers":[{"upToM3":null,"unitPriceMinor":1},{"upToM3":5,"unitPriceMinor":1}]}"#
                )))
        XCTAssertThrowsError(
            try Tariff(
                json: try json(
                    #"{"id":"x","provider":"ISKI","validFrom":"2025-06-01","tiers":[{"upToM3":15,"unitPriceMinor":1},{"upToM3":10,"unitPriceMinor":1}]}"#
                )))
        XCTAssertThrowsError(
            try Tariff(json: try json(#"{"id":"x","provider":"iski","validFrom":"2025-06-01","tiers":[{"upToM3":null,"unitPriceMinor":1}]}"#)))
    }

    func testValidationOfEveryRule() throws {
        let ok = try BillValidation.create(
            try json(
                """
                {"provider": "ISKI", "subscriberNo": "1234567", "period": "2026-10", "consumptionM3": 12.345,
                 "amountMinor": 58275, "dueDate": "2026-11-20"}
                """))
        XCTAssertEqual(ok.content.consumptionMilliM3, 12_345)
        XCTAssertEqual(ok.content.currency, "TRY")
        XCTAssertNil(ok.content.paidAt)
        let base = #""provider": "ISKI", "subscriberNo": "9", "period": "2025-01", "consumptionM3": 1, "amountMinor": 1, "dueDate": "2025-02-01""#
        let cases: [(String, String, FieldErrorCode)] = [
            (#""period": "2026-13""#, "/period", .invalidFormat),
            (#""consumptionM3": -1"#, "/consumptionM3", .outOfRange),
            (#""consumptionM3": 100001"#, "/consumptionM3", .outOfRange),
            (#""consumptionM3": 1.2345"#, "/consumptionM3", .invalidFormat),
            (#""amountMinor": 1.5"#, "/amountMinor", .invalidType),
            (#""amountMinor": -1"#, "/amountMinor", .outOfRange),
            (#""provider": "x""#, "/provider", .invalidFormat),
            (#""provider": "ABCDEFGHIJKLMNOPQ""#, "/provider", .invalidFormat),
            (#""currency": "TL""#, "/currency", .invalidFormat),
            (#""currency": "try""#, "/currency", .invalidFormat),
            (#""dueDate": "20-11-2026""#, "/dueDate", .invalidFormat),
            (#""paidAt": "yesterday""#, "/paidAt", .invalidFormat),
            (#""subscriberNo": """#, "/subscriberNo", .required),
            (#""subscriberNo": "123456789012345678901234567890123""#, "/subscriberNo", .tooLong),
            (#""status": "paid""#, "/status", .readOnlyField),
            (#""colour": "blue""#, "/colour", .unknownField),
        ]
        for (override, pointer, code) in cases {
            // Later duplicate keys are refused by the parser, so build the object member-wise.
            guard case .object(var members) = try json("{" + base + "}"), case .object(let extra) = try json("{" + override + "}")
            else { return XCTFail() }
            for (k, v) in extra {
                if let i = members.firstIndex(where: { $0.0 == k }) { members[i].1 = v } else { members.append((k, v)) }
            }
            let body = JSONValue.object(members)
            let errors = fieldErrors({ () throws(ValidationFailure) -> BillValidation.Create in try BillValidation.create(body) })
            XCTAssertEqual(errors.first?.pointer, pointer, override)
            XCTAssertEqual(errors.first?.code, code, override)
        }
        let empty = try json("{}")
        let required = fieldErrors({ () throws(ValidationFailure) -> BillValidation.Create in try BillValidation.create(empty) })
        XCTAssertEqual(
            Set(required.map(\.pointer)),
            ["/provider", "/subscriberNo", "/period", "/consumptionM3", "/amountMinor", "/dueDate"])
    }

    func testMergePatch() throws {
        let b = bill("2026-10", 1000)
        let paid = try BillValidation.applyMergePatch(try json(#"{"paidAt": "2026-11-01T10:00:00+03:00", "currency": "EUR"}"#), to: b)
        XCTAssertEqual(paid.paidAt, RFC3339.parse("2026-11-01T07:00:00Z"))
        XCTAssertEqual(paid.currency, "EUR")
        let reset = try BillValidation.applyMergePatch(try json(#"{"paidAt": null, "currency": null}"#), to: paid)
        XCTAssertNil(reset.paidAt)
        XCTAssertEqual(reset.currency, "TRY")
        let nullPeriod = try json(#"{"period": null}"#)
        let errors = fieldErrors({ () throws(ValidationFailure) -> BillContent in try BillValidation.applyMergePatch(nullPeriod, to: b) })
        XCTAssertEqual(errors.first?.code, .required)
    }

    func testStatusMaskingAndDecimals() {
        var b = bill("2026-10", 1000)
        b.dueDate = d("2026-11-20")
        XCTAssertEqual(BillStatus(b, today: d("2026-11-20")), .unpaid)
        XCTAssertEqual(BillStatus(b, today: d("2026-11-21")), .overdue)
        b.paidAt = 1
        XCTAssertEqual(BillStatus(b, today: d("2026-11-21")), .paid)
        XCTAssertTrue(BillValidation.isCurrencyCode("TRY"))
        XCTAssertTrue(BillValidation.isCurrencyCode("EUR"))
        XCTAssertFalse(BillValidation.isCurrencyCode("ABC"), "checked against Foundation's ISO 4217 list")
        XCTAssertFalse(BillValidation.isCurrencyCode("TL"))
        XCTAssertEqual(BillRules.maskSubscriberNo("1234567"), "****567")
        XCTAssertEqual(BillRules.maskSubscriberNo("42"), "**")
        XCTAssertEqual(BillRules.decimalText(milli: 12_500), "12.5")
        XCTAssertEqual(BillRules.decimalText(milli: 20_000), "20")
        XCTAssertEqual(BillRules.decimalText(milli: -6_005), "-6.005")
    }

    func testDayValidation() throws {
        let c = try DayValidation.put(try json(#"{"maxTemperatureC": 32.5, "activeMinutes": 65}"#))
        XCTAssertEqual(c, DayContextContent(maxTemperatureC: 32.5, activeMinutes: 65))
        XCTAssertEqual(try DayValidation.put(try json("{}")), DayContextContent())
        let bad = try json(#"{"maxTemperatureC": 99, "activeMinutes": 1441}"#)
        let errors = fieldErrors({ () throws(ValidationFailure) -> DayContextContent in try DayValidation.put(bad) })
        XCTAssertEqual(errors.map(\.code), [.outOfRange, .outOfRange])
    }
}
