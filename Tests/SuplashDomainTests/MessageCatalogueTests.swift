import Foundation
import SuplashDomain
import SuplashJSON
import XCTest

/// The alert message catalogue in `config/messages` and its renderer (spec §9).
final class MessageCatalogueTests: XCTestCase {
    /// `config/messages` of this checkout.
    private static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("config/messages")

    private func shippedFiles() throws -> [String: JSONValue] {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".json") }
        var files: [String: JSONValue] = [:]
        for name in names {
            let data = try Data(contentsOf: Self.directory.appendingPathComponent(name))
            files[name] = try JSONParser.parse(Array(data))
        }
        return files
    }

    private func shipped() throws -> MessageCatalogue {
        try MessageCatalogue(try shippedFiles().values.map { try LocaleMessages(json: $0) })
    }

    func testEveryKeyExistsInEveryLocaleWithTheSamePlaceholders() throws {
        let files = try shippedFiles()
        XCTAssertEqual(Set(files.keys), ["tr.json", "en.json"])
        var placeholdersByFile: [String: [String: Set<String>]] = [:]
        for (name, file) in files {
            guard case .object(let members)? = file["messages"] else { return XCTFail("\(name): no messages object") }
            var byKey: [String: Set<String>] = [:]
            for (key, value) in members {
                let text = try XCTUnwrap(value.stringValue, "\(name) \(key)")
                byKey[key] = Set(try XCTUnwrap(MessageCatalogue.placeholders(in: text), "\(name) \(key)"))
            }
            XCTAssertEqual(Set(byKey.keys), Set(MessageKey.allCases.map(\.rawValue)), name)
            placeholdersByFile[name] = byKey
        }
        let reference = try XCTUnwrap(placeholdersByFile["en.json"])
        for (name, byKey) in placeholdersByFile {
            for key in MessageKey.allCases {
                XCTAssertEqual(byKey[key.rawValue], reference[key.rawValue], "\(name) \(key.rawValue)")
                XCTAssertTrue((byKey[key.rawValue] ?? []).isSubset(of: key.placeholders), "\(name) \(key.rawValue)")
            }
            XCTAssertEqual(files[name]?["language"]?.stringValue.map { $0 + ".json" }, name)
        }
        XCTAssertEqual(Set(try shipped().languages.keys), ["tr", "en"])
    }

    func testLanguageForProfileLocale() throws {
        let c = try shipped()
        XCTAssertEqual(c.language(for: "tr-TR"), "tr")
        XCTAssertEqual(c.language(for: "TR"), "tr")
        XCTAssertEqual(c.language(for: "en-GB"), "en")
        XCTAssertEqual(c.language(for: "en"), "en")
        XCTAssertEqual(c.language(for: "de-DE"), "en")
        XCTAssertEqual(c.language(for: ""), "en")
    }

    func testHydrationAlertWithLocaleNumbers() throws {
        let c = try shipped()
        let tr = c.hydrationAlert(locale: "tr-TR", loggedMl: 1250, goalMl: 2500, suggestedMl: 330)
        XCTAssertEqual(tr.title, "Su zamanı")
        XCTAssertEqual(tr.body, "Bugün 2.500 ml hedefinin 1.250 ml kadarını içtin (%50). Şimdi 330 ml iyi gelir.")
        XCTAssertEqual(tr.language, "tr")
        let en = c.hydrationAlert(locale: "en-US", loggedMl: 1250, goalMl: 2500, suggestedMl: 330)
        XCTAssertEqual(en.body, "1,250 ml of your 2,500 ml goal so far today (50%). Have 330 ml now.")
        // Another language: English text with the English numbers of the catalogue.
        XCTAssertEqual(c.hydrationAlert(locale: "de-DE", loggedMl: 1250, goalMl: 2500, suggestedMl: 330).body, en.body)
        // Nothing logged yet.
        XCTAssertEqual(
            c.hydrationAlert(locale: "en-GB", loggedMl: 0, goalMl: 3000, suggestedMl: 250).body,
            "Start the day with water: today's goal is 3,000 ml. Have 250 ml to begin.")
    }

    func testBillAlertWithMoneyInTheUsersLocale() throws {
        let c = try shipped()
        let tr = c.billAlert(locale: "tr-TR", provider: "ISKI", amountMinor: 123_456, currency: "TRY", daysBeforeDue: 3)
        XCTAssertEqual(tr.title, "ISKI faturası yaklaşıyor")
        XCTAssertTrue(tr.body.contains("1.234,56"), tr.body)
        XCTAssertTrue(tr.body.contains("₺"), tr.body)
        XCTAssertTrue(tr.body.contains("3 gün"), tr.body)
        let en = c.billAlert(locale: "en-US", provider: "ISKI", amountMinor: 123_456, currency: "TRY", daysBeforeDue: 1)
        XCTAssertEqual(en.title, "ISKI bill due tomorrow")
        XCTAssertTrue(en.body.contains("1,234.56"), en.body)
        XCTAssertTrue(en.body.contains("TRY"), en.body)
        XCTAssertEqual(
            c.billAlert(locale: "en-US", provider: "ASKI", amountMinor: 500, currency: "TRY", daysBeforeDue: 0).title,
            "ASKI bill due today")
        // Minor units follow ISO 4217: yen have none.
        XCTAssertTrue(
            c.billAlert(locale: "en-US", provider: "X", amountMinor: 1234, currency: "JPY", daysBeforeDue: 0)
                .body.contains("1,234"))
        XCTAssertFalse(
            c.billAlert(locale: "en-US", provider: "X", amountMinor: 1234, currency: "JPY", daysBeforeDue: 0)
                .body.contains("12.34"))
        XCTAssertEqual(LocaleNumbers.minorUnitExponent("KWD"), 3)
        XCTAssertEqual(LocaleNumbers.minorUnitExponent("TRY"), 2)
    }

    func testCampaignAlertPicksTheUsersLanguage() throws {
        let c = try shipped()
        let texts = ["tr": "Yeni rozetler geldi", "en": "New badges are here"]
        XCTAssertEqual(
            c.campaignAlert(locale: "tr-TR", texts: texts),
            RenderedAlert(title: "Suplash", body: "Yeni rozetler geldi", language: "tr"))
        XCTAssertEqual(c.campaignAlert(locale: "fr-FR", texts: texts).body, "New badges are here")
        XCTAssertEqual(c.campaignAlert(locale: "en-US", texts: ["tr": "Yalnız Türkçe"]).body, "Yalnız Türkçe")
    }

    func testBadCatalogueFilesAreRefused() throws {
        let good = try XCTUnwrap(try shippedFiles()["en.json"])
        func variant(_ edit: (inout [(String, JSONValue)]) -> Void) -> JSONValue {
            guard case .object(var top) = good, let i = top.firstIndex(where: { $0.0 == "messages" }),
                case .object(var messages) = top[i].1
            else { return .null }
            edit(&messages)
            top[i].1 = .object(messages)
            return .object(top)
        }
        let cases: [(String, JSONValue)] = [
            ("missing", variant { $0.removeAll { $0.0 == "bill.today.body" } }),
            ("unknown", variant { $0.append(("bill.overdue.body", .string("x"))) }),
            ("placeholder", variant { m in m = m.map { $0.0 == "hydration.title" ? ($0.0, .string("{goal}")) : $0 } }),
            ("brace", variant { m in m = m.map { $0.0 == "campaign.title" ? ($0.0, .string("Sup{lash")) : $0 } }),
            ("empty", variant { m in m = m.map { $0.0 == "campaign.title" ? ($0.0, .string("")) : $0 } }),
        ]
        for (name, json) in cases {
            XCTAssertThrowsError(try LocaleMessages(json: json), name)
        }
        let en = try LocaleMessages(json: good)
        XCTAssertThrowsError(try MessageCatalogue([en, en]))
        let trFile = try XCTUnwrap(try shippedFiles()["tr.json"])
        XCTAssertThrowsError(try MessageCatalogue([try LocaleMessages(json: trFile)]))  // no default language
    }

    func testPlaceholderScanningAndSubstitution() {
        XCTAssertEqual(MessageCatalogue.placeholders(in: "{a} and {bC}"), ["a", "bC"])
        XCTAssertEqual(MessageCatalogue.placeholders(in: "none"), [])
        XCTAssertNil(MessageCatalogue.placeholders(in: "{a"))
        XCTAssertNil(MessageCatalogue.placeholders(in: "a}"))
        XCTAssertNil(MessageCatalogue.placeholders(in: "{}"))
        XCTAssertNil(MessageCatalogue.placeholders(in: "{a b}"))
        XCTAssertEqual(MessageCatalogue.substitute("{a}+{b}={c}", ["a": "1", "b": "2"]), "1+2={c}")
        XCTAssertEqual(MessageCatalogue.substitute("{a}{a}", ["a": "{a}"]), "{a}{a}")
    }
}
