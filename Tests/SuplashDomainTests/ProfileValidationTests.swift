import SuplashDomain
import SuplashJSON
import XCTest

final class ProfileValidationTests: XCTestCase {
    private static let knownZones: Set<String> = [
        "Europe/Istanbul", "Europe/Berlin", "Europe/Kiev", "Europe/Kyiv",
        "America/Los_Angeles", "UTC",
    ]
    private let base = UserProfile(
        id: "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f", email: "ayse@example.com",
        displayName: "Ayşe", now: 1_768_462_200_000)

    private func patch(_ text: String, to profile: UserProfile? = nil) throws -> UserProfile {
        try ProfileValidation.applyMergePatch(
            json(text), to: profile ?? base,
            isKnownTimeZone: { Self.knownZones.contains($0) })
    }

    private func errors(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [FieldError] {
        let body = try json(text, file: file, line: line)
        return fieldErrors(
            { () throws(ValidationFailure) -> UserProfile in
                try ProfileValidation.applyMergePatch(body, to: base, isKnownTimeZone: { Self.knownZones.contains($0) })
            }, file: file, line: line)
    }

    // MARK: Defaults and the empty patch

    func testNewProfileHasSpecDefaults() {
        XCTAssertEqual(base.activityLevel, .light)
        XCTAssertEqual(base.wakeTime, "07:00")
        XCTAssertEqual(base.sleepTime, "23:00")
        XCTAssertEqual(base.timezone, "Europe/Istanbul")
        XCTAssertEqual(base.locale, "tr-TR")
        XCTAssertEqual(base.cupSizesMl, [150, 250, 330, 500])
        XCTAssertNil(base.dailyGoalMl)
        XCTAssertNil(base.weightKg)
        XCTAssertFalse(base.emailVerified)
        XCTAssertEqual(base.version, 1)
        XCTAssertEqual(base.createdAt, base.updatedAt)
        XCTAssertEqual(base.recommendedGoalMl, 2500)
    }

    func testEmptyPatchChangesNothing() throws {
        XCTAssertEqual(try patch("{}"), base)
    }

    func testNonObjectBodyIsRejected() throws {
        for text in ["[]", "[1,2,3]", "null", "\"x\"", "42", "true"] {
            assertSingleError(try errors(text), "", .invalidType)
        }
    }

    // MARK: A full valid patch, then resets

    func testValidPatchSetsEveryWritableField() throws {
        let p = try patch(
            """
            {"displayName": "Deniz", "weightKg": 62.5, "activityLevel": "moderate", "wakeTime": "06:30",
             "sleepTime": "22:45", "timezone": "Europe/Berlin", "locale": "de-DE", "dailyGoalMl": 2000,
             "cupSizesMl": [200, 400]}
            """)
        XCTAssertEqual(p.displayName, "Deniz")
        XCTAssertEqual(p.weightKg, 62.5)
        XCTAssertEqual(p.activityLevel, .moderate)
        XCTAssertEqual(p.wakeTime, "06:30")
        XCTAssertEqual(p.sleepTime, "22:45")
        XCTAssertEqual(p.timezone, "Europe/Berlin")
        XCTAssertEqual(p.locale, "de-DE")
        XCTAssertEqual(p.dailyGoalMl, 2000)
        XCTAssertEqual(p.cupSizesMl, [200, 400])
        XCTAssertEqual(p.recommendedGoalMl, 2650)  // 62.5 × 35 × 1.2 = 2625 → 2650
        // Server-owned fields are untouched (the store stamps updatedAt/version).
        XCTAssertEqual(p.id, base.id)
        XCTAssertEqual(p.email, base.email)
        XCTAssertEqual(p.version, base.version)
        XCTAssertEqual(p.updatedAt, base.updatedAt)
        XCTAssertEqual(p.createdAt, base.createdAt)
    }

    func testNullResetsEveryFieldToItsDefault() throws {
        let changed = try patch(
            """
            {"displayName": "Deniz", "weightKg": 62.5, "activityLevel": "athlete", "wakeTime": "06:30",
             "sleepTime": "22:45", "timezone": "Europe/Berlin", "locale": "de-DE", "dailyGoalMl": 2000,
             "cupSizesMl": [200, 400]}
            """)
        let reset = try patch(
            """
            {"displayName": null, "weightKg": null, "activityLevel": null, "wakeTime": null, "sleepTime": null,
             "timezone": null, "locale": null, "dailyGoalMl": null, "cupSizesMl": null}
            """, to: changed)
        XCTAssertNil(reset.displayName)
        XCTAssertNil(reset.weightKg)
        XCTAssertEqual(reset.activityLevel, .light)
        XCTAssertEqual(reset.wakeTime, "07:00")
        XCTAssertEqual(reset.sleepTime, "23:00")
        XCTAssertEqual(reset.timezone, "Europe/Istanbul")
        XCTAssertEqual(reset.locale, "tr-TR")
        XCTAssertNil(reset.dailyGoalMl)
        XCTAssertEqual(reset.cupSizesMl, [150, 250, 330, 500])
    }

    func testPatchLeavesOmittedFieldsAlone() throws {
        // The acceptance flow: set several fields, then null only the weight.
        let first = try patch(#"{"displayName": "Ayşe", "weightKg": 62.5, "timezone": "Europe/Berlin", "cupSizesMl": [200, 400]}"#)
        let second = try patch(#"{"weightKg": null}"#, to: first)
        XCTAssertNil(second.weightKg)
        XCTAssertEqual(second.displayName, "Ayşe")
        XCTAssertEqual(second.timezone, "Europe/Berlin")
        XCTAssertEqual(second.cupSizesMl, [200, 400])
    }

    // MARK: displayName

    func testDisplayNameCountsCharactersNotBytes() throws {
        let eighty = String(repeating: "a", count: 80)
        XCTAssertEqual(try patch(#"{"displayName": "\#(eighty)"}"#).displayName, eighty)
        assertSingleError(try errors(#"{"displayName": "\#(eighty)a"}"#), "/displayName", .tooLong)

        // 80 Turkish letters: 160 UTF-8 bytes, 80 characters.
        let turkish = String(repeating: "ş", count: 40) + String(repeating: "İ", count: 40)
        XCTAssertEqual(turkish.utf8.count, 160)
        XCTAssertEqual(try patch(#"{"displayName": "\#(turkish)"}"#).displayName, turkish)
        assertSingleError(try errors(#"{"displayName": "\#(turkish)ğ"}"#), "/displayName", .tooLong)

        // 80 family emoji (ZWJ sequences of 7 scalars, 25 bytes each) are 80 characters.
        let family = String(repeating: "👨‍👩‍👧‍👦", count: 80)
        XCTAssertEqual(family.count, 80)
        XCTAssertEqual(try patch(#"{"displayName": "\#(family)"}"#).displayName, family)
        assertSingleError(try errors(#"{"displayName": "\#(family)💧"}"#), "/displayName", .tooLong)

        // Combining marks and flags: "e" + U+0301 is one character; so is a regional-indicator pair.
        let combining = String(repeating: "e\u{301}", count: 80)
        XCTAssertEqual(try patch(#"{"displayName": "\#(combining)"}"#).displayName, combining)
        let flags = String(repeating: "🇹🇷", count: 80)
        XCTAssertEqual(try patch(#"{"displayName": "\#(flags)"}"#).displayName, flags)
        assertSingleError(try errors(#"{"displayName": "\#(flags)🇩🇪"}"#), "/displayName", .tooLong)
    }

    func testDisplayNameMustBeAString() throws {
        for value in ["42", "true", "[]", "{}", #"["a"]"#] {
            assertSingleError(try errors(#"{"displayName": \#(value)}"#), "/displayName", .invalidType)
        }
    }

    // MARK: weightKg

    func testWeightRange() throws {
        XCTAssertEqual(try patch(#"{"weightKg": 20}"#).weightKg, 20)
        XCTAssertEqual(try patch(#"{"weightKg": 400}"#).weightKg, 400)
        XCTAssertEqual(try patch(#"{"weightKg": 400.0}"#).weightKg, 400)
        XCTAssertEqual(try patch(#"{"weightKg": 70.25}"#).weightKg, 70.25)
        XCTAssertEqual(try patch(#"{"weightKg": 6.25e1}"#).weightKg, 62.5)
        for value in ["19.99", "400.01", "0", "-70", "1e400", "-1e400", "1e-400"] {
            assertSingleError(try errors(#"{"weightKg": \#(value)}"#), "/weightKg", .outOfRange)
        }
        for value in [#""70""#, "true", "[70]", "{}"] {
            assertSingleError(try errors(#"{"weightKg": \#(value)}"#), "/weightKg", .invalidType)
        }
    }

    // MARK: activityLevel

    func testActivityLevelEnum() throws {
        for level in ActivityLevel.allCases {
            XCTAssertEqual(try patch(#"{"activityLevel": "\#(level.rawValue)"}"#).activityLevel, level)
        }
        for value in ["couch", "Light", "LIGHT", " light", ""] {
            assertSingleError(try errors(#"{"activityLevel": "\#(value)"}"#), "/activityLevel", .invalidFormat)
        }
        assertSingleError(try errors(#"{"activityLevel": 1}"#), "/activityLevel", .invalidType)
    }

    // MARK: wakeTime / sleepTime

    func testClockTimes() throws {
        for field in ["wakeTime", "sleepTime"] {
            for good in ["00:00", "07:00", "23:59", "12:30"] {
                let p = try patch(#"{"\#(field)": "\#(good)"}"#)
                XCTAssertEqual(field == "wakeTime" ? p.wakeTime : p.sleepTime, good)
            }
            for bad in [
                "24:00", "25:00", "23:60", "7:00", "07:0", "0700", "07-00", "07:00:00", "ab:cd", "",
                "07:00 ", "-1:00", "０7:00", "07:5\u{301}",
            ] {
                assertSingleError(try errors(#"{"\#(field)": "\#(bad)"}"#), "/\(field)", .invalidFormat)
            }
            assertSingleError(try errors(#"{"\#(field)": 700}"#), "/\(field)", .invalidType)
        }
    }

    func testClockTimeHelper() {
        XCTAssertEqual(ProfileValidation.clockTime("00:00"), "00:00")
        XCTAssertEqual(ProfileValidation.clockTime("23:59"), "23:59")
        XCTAssertNil(ProfileValidation.clockTime("24:00"))
        XCTAssertNil(ProfileValidation.clockTime("12:60"))
        XCTAssertNil(ProfileValidation.clockTime("1:00"))
    }

    // MARK: timezone

    func testTimezoneUsesTheInjectedPredicateAndIsStoredAsSent() throws {
        XCTAssertEqual(try patch(#"{"timezone": "Europe/Kiev"}"#).timezone, "Europe/Kiev")
        XCTAssertEqual(try patch(#"{"timezone": "Europe/Kyiv"}"#).timezone, "Europe/Kyiv")
        XCTAssertEqual(try patch(#"{"timezone": "America/Los_Angeles"}"#).timezone, "America/Los_Angeles")
        for bad in ["Mars/Olympus", "europe/berlin", "", "+03:00"] {
            assertSingleError(try errors(#"{"timezone": "\#(bad)"}"#), "/timezone", .invalidFormat)
        }
        assertSingleError(try errors(#"{"timezone": 3}"#), "/timezone", .invalidType)
    }

    func testTimezonePredicateIsAskedAboutTheSentValue() throws {
        var asked: [String] = []
        let p = try ProfileValidation.applyMergePatch(json(#"{"timezone": "Asia/Tokyo"}"#), to: base) {
            asked.append($0)
            return true
        }
        XCTAssertEqual(asked, ["Asia/Tokyo"])
        XCTAssertEqual(p.timezone, "Asia/Tokyo")
    }

    // MARK: locale

    func testLocaleBCP47() throws {
        for good in ["tr-TR", "en", "en-US", "zh-Hant-TW", "de-CH-1996", "es-419", "sr-Latn-RS", "fil", "tr"] {
            XCTAssertEqual(try patch(#"{"locale": "\#(good)"}"#).locale, good)
        }
        for bad in [
            "", "tr_TR", "t", "-TR", "tr-", "tr--TR", "tr-TR-", "123", "en-US-toolongsubtag", "tr TR",
            "çe-TR", "en-\u{301}", String(repeating: "a", count: 9),
            "en-" + Array(repeating: "abcdefgh", count: 4).joined(separator: "-"),
        ] {
            assertSingleError(try errors(#"{"locale": "\#(bad)"}"#), "/locale", .invalidFormat)
        }
        assertSingleError(try errors(#"{"locale": ["tr"]}"#), "/locale", .invalidType)
    }

    // MARK: dailyGoalMl

    func testDailyGoalIsAnIntegerFrom500To10000() throws {
        XCTAssertEqual(try patch(#"{"dailyGoalMl": 500}"#).dailyGoalMl, 500)
        XCTAssertEqual(try patch(#"{"dailyGoalMl": 10000}"#).dailyGoalMl, 10_000)
        XCTAssertEqual(try patch(#"{"dailyGoalMl": 2000.0}"#).dailyGoalMl, 2000)
        XCTAssertEqual(try patch(#"{"dailyGoalMl": 2.5e3}"#).dailyGoalMl, 2500)
        for value in ["499", "10001", "0", "-2000", "1e400", "99999999999999999999999"] {
            assertSingleError(try errors(#"{"dailyGoalMl": \#(value)}"#), "/dailyGoalMl", .outOfRange)
        }
        for value in ["2000.5", "true", #""2000""#, "[2000]"] {
            assertSingleError(try errors(#"{"dailyGoalMl": \#(value)}"#), "/dailyGoalMl", .invalidType)
        }
    }

    // MARK: cupSizesMl

    func testCupSizes() throws {
        XCTAssertEqual(try patch(#"{"cupSizesMl": [50]}"#).cupSizesMl, [50])
        XCTAssertEqual(
            try patch(#"{"cupSizesMl": [2000, 50, 250.0, 100, 200, 300, 400, 500]}"#).cupSizesMl,
            [2000, 50, 250, 100, 200, 300, 400, 500])
        assertSingleError(try errors(#"{"cupSizesMl": []}"#), "/cupSizesMl", .outOfRange)
        assertSingleError(try errors(#"{"cupSizesMl": [1,2,3,4,5,6,7,8,9]}"#), "/cupSizesMl", .outOfRange)
        assertSingleError(try errors(#"{"cupSizesMl": 250}"#), "/cupSizesMl", .invalidType)
        assertSingleError(try errors(#"{"cupSizesMl": "250"}"#), "/cupSizesMl", .invalidType)
        assertSingleError(try errors(#"{"cupSizesMl": [10]}"#), "/cupSizesMl/0", .outOfRange)
        assertSingleError(try errors(#"{"cupSizesMl": [250, 2001]}"#), "/cupSizesMl/1", .outOfRange)
        assertSingleError(try errors(#"{"cupSizesMl": [250, 49]}"#), "/cupSizesMl/1", .outOfRange)
        assertSingleError(try errors(#"{"cupSizesMl": [250, 1e400]}"#), "/cupSizesMl/1", .outOfRange)
    }

    func testEveryBadCupIsReportedWithItsIndex() throws {
        let e = try errors(#"{"cupSizesMl": [250, 10, 2.5, "330", true, null, 5000, 500]}"#)
        XCTAssertEqual(
            codesByPointer(e),
            [
                "/cupSizesMl/1": .outOfRange, "/cupSizesMl/2": .invalidType, "/cupSizesMl/3": .invalidType,
                "/cupSizesMl/4": .invalidType, "/cupSizesMl/5": .invalidType, "/cupSizesMl/6": .outOfRange,
            ])
    }

    // MARK: Read-only and unknown members

    func testReadOnlyFieldsAreRejected() throws {
        for field in ["id", "email", "emailVerified", "createdAt", "updatedAt", "version", "recommendedGoalMl"] {
            assertSingleError(try errors(#"{"\#(field)": "x"}"#), "/\(field)", .readOnlyField)
            assertSingleError(try errors(#"{"\#(field)": null}"#), "/\(field)", .readOnlyField)
        }
        XCTAssertEqual(ProfileValidation.readOnlyFields.intersection(ProfileValidation.writableFields), [])
    }

    func testUnknownFieldsAreRejected() throws {
        assertSingleError(try errors(#"{"favouriteColour": "blue"}"#), "/favouriteColour", .unknownField)
        assertSingleError(try errors(#"{"DisplayName": "x"}"#), "/DisplayName", .unknownField)
        assertSingleError(try errors(#"{"password": "secret123"}"#), "/password", .unknownField)
        // RFC 6901 escaping of the pointer.
        assertSingleError(try errors(#"{"a/b~c": 1}"#), "/a~1b~0c", .unknownField)
    }

    /// Spec §1: names are compared code point by code point. `weight\u212Ag` (KELVIN SIGN)
    /// is an unknown field and leaves `weightKg` alone; `weight\u004Bg` is `weightKg`.
    func testKelvinSignNameIsUnknownNotWeightKg() throws {
        assertSingleError(try errors(#"{"weight\u212Ag": 70}"#), "/weight\u{212A}g", .unknownField)
        assertSingleError(try errors(#"{"weightKg": 70, "weight\u212Ag": 80}"#), "/weight\u{212A}g", .unknownField)
        XCTAssertEqual(try patch(#"{"weight\u004Bg": 70}"#).weightKg, 70)
    }

    func testEveryBadFieldIsReportedTogether() throws {
        let e = try errors(
            """
            {"timezone": "Mars/Olympus", "wakeTime": "25:00", "cupSizesMl": [10], "activityLevel": "couch",
             "email": "x@y.z", "favouriteColour": "blue", "weightKg": 5, "displayName": 7,
             "sleepTime": "23:00", "locale": "tr_TR", "dailyGoalMl": 2.5}
            """)
        XCTAssertEqual(
            codesByPointer(e),
            [
                "/timezone": .invalidFormat, "/wakeTime": .invalidFormat, "/cupSizesMl/0": .outOfRange,
                "/activityLevel": .invalidFormat, "/email": .readOnlyField, "/favouriteColour": .unknownField,
                "/weightKg": .outOfRange, "/displayName": .invalidType, "/locale": .invalidFormat,
                "/dailyGoalMl": .invalidType,
            ])
    }

    func testMessagesDoNotEchoTheValue() throws {
        let e = try errors(#"{"displayName": "\#(String(repeating: "secretname", count: 9))", "locale": "secretlocale", "timezone": "secret/zone"}"#)
        XCTAssertEqual(e.count, 3)
        for error in e {
            XCTAssertFalse(error.message.contains("secret"), error.message)
            XCTAssertFalse(error.message.isEmpty)
        }
    }
}
