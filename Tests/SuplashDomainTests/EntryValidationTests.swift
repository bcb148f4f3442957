import SuplashDomain
import SuplashJSON
import XCTest

final class EntryValidationTests: XCTestCase {
    /// The server clock for these tests: 2026-01-15T07:30:00Z.
    private let now: Int64 = 1_768_462_200_000
    private let nowText = "2026-01-15T07:30:00Z"

    private func create(_ text: String) throws -> EntryValidation.Create {
        try EntryValidation.create(json(text), now: now)
    }

    private func createErrors(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [FieldError] {
        let body = try json(text, file: file, line: line)
        return fieldErrors(
            { () throws(ValidationFailure) -> EntryValidation.Create in
                try EntryValidation.create(body, now: now)
            }, file: file, line: line)
    }

    /// A valid body with `extra` members spliced in (later members replace nothing: keep names unique).
    private func body(_ extra: String = "", amount: String = "250") -> String {
        #"{"amountMl": \#(amount), "loggedAt": "\#(nowText)"\#(extra.isEmpty ? "" : ", " + extra)}"#
    }

    /// Spec §1: `health\u212AitUUID` (KELVIN SIGN) is an unknown field, not `healthKitUUID`.
    func testKelvinSignNameIsAnUnknownField() throws {
        let errors = try createErrors(body(#""health\u212AitUUID": "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f""#))
        XCTAssertEqual(errors.map(\.code), [.unknownField])
        XCTAssertEqual(errors.first?.pointer, "/health\u{212A}itUUID")
        let ascii = try create(body(#""health\u004BitUUID": "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f""#))
        XCTAssertEqual(ascii.content.healthKitUUID, "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f")
    }

    // MARK: create — the happy path

    func testMinimalCreateUsesDefaults() throws {
        let c = try create(body())
        XCTAssertNil(c.id)
        XCTAssertEqual(c.content, WaterEntryContent(amountMl: 250, loggedAt: now, source: .api, healthKitUUID: nil, note: nil))
    }

    func testFullCreate() throws {
        let c = try create(
            body(
                #""id": "0192F6E4-1C2B-7A3D-8E4F-5A6B7C8D9E0F", "source": "watch", "#
                    + #""healthKitUUID": "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "note": "after run""#))
        XCTAssertEqual(c.id, "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f")
        XCTAssertEqual(c.content.amountMl, 250)
        XCTAssertEqual(c.content.loggedAt, now)
        XCTAssertEqual(c.content.source, .watch)
        XCTAssertEqual(c.content.healthKitUUID, "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
        XCTAssertEqual(c.content.note, "after run")
    }

    func testNullOptionalMembersMeanDefaults() throws {
        let c = try create(body(#""id": null, "source": null, "healthKitUUID": null, "note": null"#))
        XCTAssertNil(c.id)
        XCTAssertEqual(c.content, WaterEntryContent(amountMl: 250, loggedAt: now))
    }

    func testEquivalentSpellingsGiveIdenticalContent() throws {
        // Spec §4: a re-post is "identical" when the values are the same after normalisation.
        let a = try create(#"{"amountMl": 250, "loggedAt": "2026-01-15T07:30:00Z", "healthKitUUID": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}"#)
        let b = try create(
            #"{"amountMl": 250.0, "loggedAt": "2026-01-15t10:30:00.000+03:00", "source": "api", "healthKitUUID": "6BA7B810-9DAD-11D1-80B4-00C04FD430C8"}"#
        )
        XCTAssertEqual(a, b)
    }

    // MARK: amountMl

    func testAmountAcceptsIntegralNumbersInRange() throws {
        for (text, value) in [
            ("1", 1), ("5000", 5000), ("250", 250), ("250.0", 250), ("2.5e2", 250), ("25E1", 250),
            ("5000.000", 5000),
        ] {
            XCTAssertEqual(try create(body(amount: text)).content.amountMl, value, text)
        }
    }

    func testAmountRejectsNonIntegers() throws {
        for text in ["2.5", "-0.5", "250.1", "1e-3", "true", "false", #""250""#, "[250]", #"{"ml": 250}"#] {
            assertSingleError(try createErrors(body(amount: text)), "/amountMl", .invalidType)
        }
    }

    func testAmountRange() throws {
        for text in ["0", "-0", "-1", "5001", "-250", "1e400", "-1e400", "1e19", "9223372036854775808", "1e99999"] {
            assertSingleError(try createErrors(body(amount: text)), "/amountMl", .outOfRange)
        }
    }

    func testAmountIsRequired() throws {
        assertSingleError(try createErrors(#"{"loggedAt": "\#(nowText)"}"#), "/amountMl", .required)
        assertSingleError(try createErrors(body(amount: "null")), "/amountMl", .required)
    }

    // MARK: loggedAt

    func testLoggedAtIsRequired() throws {
        assertSingleError(try createErrors(#"{"amountMl": 250}"#), "/loggedAt", .required)
        assertSingleError(try createErrors(#"{"amountMl": 250, "loggedAt": null}"#), "/loggedAt", .required)
    }

    func testLoggedAtFormat() throws {
        for text in ["yesterday", "", "2026-01-15", "2026-01-15T07:30:00", "2026-02-30T07:30:00Z", "1768462200000"] {
            assertSingleError(try createErrors(#"{"amountMl": 250, "loggedAt": "\#(text)"}"#), "/loggedAt", .invalidFormat)
        }
        assertSingleError(try createErrors(#"{"amountMl": 250, "loggedAt": 1768462200000}"#), "/loggedAt", .invalidType)
    }

    func testLoggedAtIsNormalisedToUTCMillis() throws {
        let c = try create(#"{"amountMl": 200, "loggedAt": "2026-01-15T10:29:59.123456+03:00"}"#)
        XCTAssertEqual(c.content.loggedAt, now - 1000 + 123)
        XCTAssertEqual(RFC3339.format(c.content.loggedAt), "2026-01-15T07:29:59.123Z")
    }

    func testLoggedAtLowerBoundIs2000() throws {
        XCTAssertEqual(
            try create(#"{"amountMl": 250, "loggedAt": "2000-01-01T00:00:00Z"}"#).content.loggedAt,
            EntryValidation.earliestLoggedAt)
        XCTAssertEqual(
            try create(#"{"amountMl": 250, "loggedAt": "2000-01-01T03:00:00+03:00"}"#).content.loggedAt,
            EntryValidation.earliestLoggedAt)
        for text in [
            "1999-12-31T23:59:59.999Z", "1999-12-31T23:00:00Z", "2000-01-01T02:59:59+03:00", "1970-01-01T00:00:00Z",
            "0001-01-01T00:00:00Z",
        ] {
            assertSingleError(try createErrors(#"{"amountMl": 250, "loggedAt": "\#(text)"}"#), "/loggedAt", .outOfRange)
        }
    }

    func testLoggedAtMayBeAtMostFiveMinutesAhead() throws {
        XCTAssertEqual(try create(#"{"amountMl": 250, "loggedAt": "2026-01-15T07:35:00Z"}"#).content.loggedAt, now + 300_000)
        XCTAssertEqual(try create(#"{"amountMl": 250, "loggedAt": "2026-01-15T10:35:00.000+03:00"}"#).content.loggedAt, now + 300_000)
        for text in ["2026-01-15T07:35:00.001Z", "2026-01-16T07:30:00Z", "9999-12-31T23:59:59Z"] {
            assertSingleError(try createErrors(#"{"amountMl": 250, "loggedAt": "\#(text)"}"#), "/loggedAt", .outOfRange)
        }
    }

    // MARK: source, healthKitUUID, note, id

    func testSourceEnum() throws {
        for source in EntrySource.allCases {
            XCTAssertEqual(try create(body(#""source": "\#(source.rawValue)""#)).content.source, source)
        }
        XCTAssertEqual(
            EntrySource.allCases.map(\.rawValue),
            ["phone", "watch", "widget", "notification", "healthkit", "import", "api"])
        for bad in ["fridge", "Watch", "HealthKit", ""] {
            assertSingleError(try createErrors(body(#""source": "\#(bad)""#)), "/source", .invalidFormat)
        }
        assertSingleError(try createErrors(body(#""source": 1"#)), "/source", .invalidType)
    }

    func testHealthKitUUID() throws {
        assertSingleError(try createErrors(body(#""healthKitUUID": "nope""#)), "/healthKitUUID", .invalidFormat)
        assertSingleError(try createErrors(body(#""healthKitUUID": 7"#)), "/healthKitUUID", .invalidType)
        XCTAssertEqual(
            try create(body(#""healthKitUUID": "ABCDEF01-2345-6789-ABCD-EF0123456789""#)).content.healthKitUUID,
            "abcdef01-2345-6789-abcd-ef0123456789")
    }

    func testNoteCountsCharacters() throws {
        let max = String(repeating: "x", count: 280)
        XCTAssertEqual(try create(body(#""note": "\#(max)""#)).content.note, max)
        assertSingleError(try createErrors(body(#""note": "\#(max)x""#)), "/note", .tooLong)
        let emoji = String(repeating: "💧", count: 280)  // 1120 UTF-8 bytes
        XCTAssertEqual(try create(body(#""note": "\#(emoji)""#)).content.note, emoji)
        assertSingleError(try createErrors(body(#""note": "\#(emoji)💧""#)), "/note", .tooLong)
        XCTAssertEqual(try create(body(#""note": """#)).content.note, "")
        assertSingleError(try createErrors(body(#""note": 5"#)), "/note", .invalidType)
    }

    func testIdMustBeAUUID() throws {
        assertSingleError(try createErrors(body(#""id": "not-a-uuid""#)), "/id", .invalidFormat)
        assertSingleError(try createErrors(body(#""id": 42"#)), "/id", .invalidType)
        XCTAssertEqual(
            try create(body(#""id": "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f""#)).id,
            "0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f")
    }

    // MARK: unknown / read-only / shape

    func testUnknownAndReadOnlyMembers() throws {
        assertSingleError(try createErrors(body(#""color": "blue""#)), "/color", .unknownField)
        assertSingleError(try createErrors(body(#""amount": 250"#)), "/amount", .unknownField)
        for field in ["createdAt", "updatedAt", "version", "deleted"] {
            assertSingleError(try createErrors(body(#""\#(field)": 1"#)), "/\(field)", .readOnlyField)
        }
    }

    func testNonObjectBody() throws {
        for text in ["[1,2,3]", "[]", "null", "250", "\"x\""] {
            assertSingleError(try createErrors(text), "", .invalidType)
        }
    }

    func testEveryBadFieldIsReportedTogether() throws {
        let e = try createErrors(
            """
            {"id": "x", "amountMl": 0, "loggedAt": "yesterday", "source": "fridge", "healthKitUUID": "y",
             "note": "\(String(repeating: "n", count: 281))", "color": "blue", "version": 3}
            """)
        XCTAssertEqual(
            codesByPointer(e),
            [
                "/id": .invalidFormat, "/amountMl": .outOfRange, "/loggedAt": .invalidFormat, "/source": .invalidFormat,
                "/healthKitUUID": .invalidFormat, "/note": .tooLong, "/color": .unknownField, "/version": .readOnlyField,
            ])
        let missing = try createErrors("{}")
        XCTAssertEqual(codesByPointer(missing), ["/amountMl": .required, "/loggedAt": .required])
    }

    // MARK: applyMergePatch

    private let stored = WaterEntryContent(
        amountMl: 250, loggedAt: 1_768_462_000_000, source: .watch,
        healthKitUUID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8", note: "after run")

    private func patch(_ text: String) throws -> WaterEntryContent {
        try EntryValidation.applyMergePatch(json(text), to: stored, now: now)
    }

    private func patchErrors(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [FieldError] {
        let body = try json(text, file: file, line: line)
        return fieldErrors(
            { () throws(ValidationFailure) -> WaterEntryContent in
                try EntryValidation.applyMergePatch(body, to: stored, now: now)
            }, file: file, line: line)
    }

    func testEmptyPatchChangesNothing() throws {
        XCTAssertEqual(try patch("{}"), stored)
    }

    func testPatchChangesOnlyTheGivenFields() throws {
        var expected = stored
        expected.amountMl = 330
        XCTAssertEqual(try patch(#"{"amountMl": 330}"#), expected)
        expected.loggedAt = now
        expected.source = .phone
        expected.healthKitUUID = "abcdef01-2345-6789-abcd-ef0123456789"
        expected.note = "🥤"
        XCTAssertEqual(
            try patch(
                #"{"amountMl": 330.0, "loggedAt": "2026-01-15T10:30:00+03:00", "source": "phone", "healthKitUUID": "ABCDEF01-2345-6789-ABCD-EF0123456789", "note": "🥤"}"#
            ),
            expected)
    }

    func testPatchNullResetsOptionalFields() throws {
        let p = try patch(#"{"source": null, "healthKitUUID": null, "note": null}"#)
        XCTAssertEqual(
            p,
            WaterEntryContent(
                amountMl: stored.amountMl, loggedAt: stored.loggedAt, source: .api,
                healthKitUUID: nil, note: nil))
    }

    func testPatchCannotNullRequiredFields() throws {
        XCTAssertEqual(
            codesByPointer(try patchErrors(#"{"amountMl": null, "loggedAt": null}"#)),
            ["/amountMl": .required, "/loggedAt": .required])
    }

    func testPatchAppliesTheSameRulesAsCreate() throws {
        let e = try patchErrors(
            """
            {"amountMl": 2.5, "loggedAt": "1999-12-31T23:00:00Z", "source": "fridge", "healthKitUUID": "nope",
             "note": "\(String(repeating: "n", count: 281))"}
            """)
        XCTAssertEqual(
            codesByPointer(e),
            [
                "/amountMl": .invalidType, "/loggedAt": .outOfRange, "/source": .invalidFormat,
                "/healthKitUUID": .invalidFormat, "/note": .tooLong,
            ])
        assertSingleError(try patchErrors(#"{"amountMl": 5001}"#), "/amountMl", .outOfRange)
        assertSingleError(try patchErrors(#"{"amountMl": 1e400}"#), "/amountMl", .outOfRange)
        assertSingleError(try patchErrors(#"{"amountMl": "250"}"#), "/amountMl", .invalidType)
        assertSingleError(try patchErrors(#"{"loggedAt": "2026-01-15T07:35:00.001Z"}"#), "/loggedAt", .outOfRange)
        assertSingleError(try patchErrors(#"{"loggedAt": "soon"}"#), "/loggedAt", .invalidFormat)
    }

    func testPatchRejectsIdAndServerFields() throws {
        for field in ["id", "createdAt", "updatedAt", "version", "deleted"] {
            assertSingleError(try patchErrors(#"{"\#(field)": "x"}"#), "/\(field)", .readOnlyField)
        }
        assertSingleError(try patchErrors(#"{"colour": "blue"}"#), "/colour", .unknownField)
        assertSingleError(try patchErrors("[]"), "", .invalidType)
    }
}
