import SuplashDomain
import SuplashJSON
import XCTest

final class FieldReaderTests: XCTestCase {
    private func reader(_ text: String, prefix: String = "") throws -> FieldReader {
        let value = try json(text)
        return FieldReader(members: try XCTUnwrap(value.objectValue), prefix: prefix)
    }

    private func isAbsent<T>(_ v: FieldReader.Value<T>) -> Bool {
        if case .absent = v { return true }
        return false
    }
    private func isNull<T>(_ v: FieldReader.Value<T>) -> Bool {
        if case .null = v { return true }
        return false
    }
    private func isInvalid<T>(_ v: FieldReader.Value<T>) -> Bool {
        if case .invalid = v { return true }
        return false
    }

    func testAbsentNullAndValue() throws {
        var r = try reader(#"{"a": 5, "n": null}"#)
        XCTAssertEqual(r.int("a", in: 1...10).value, 5)
        XCTAssertTrue(isNull(r.int("n", in: 1...10)))
        XCTAssertTrue(isAbsent(r.int("missing", in: 1...10)))
        XCTAssertNil(r.int("missing", in: 1...10).value)
        XCTAssertEqual(r.errors, [])
    }

    func testRequiredAbsentAndNull() throws {
        var r = try reader(#"{"n": null}"#)
        XCTAssertTrue(isAbsent(r.string("missing", maxLength: 5, required: true)))
        XCTAssertTrue(isInvalid(r.string("n", maxLength: 5, required: true)))
        XCTAssertTrue(isInvalid(r.number("n", in: 0...1, required: true)))
        XCTAssertTrue(isInvalid(r.formatted("n", required: true, formatMessage: "m", parse: { $0 })))
        XCTAssertEqual(r.errors.map(\.code), [.required, .required, .required, .required])
        XCTAssertEqual(r.errors.map(\.pointer), ["/missing", "/n", "/n", "/n"])
    }

    func testIntRules() throws {
        var r = try reader(#"{"a": 250.0, "b": 2.5, "c": true, "d": "250", "e": 1e400, "f": 2.5e2, "g": -0, "h": 11}"#)
        XCTAssertEqual(r.int("a", in: 1...5000).value, 250)
        XCTAssertTrue(isInvalid(r.int("b", in: 1...5000)))
        XCTAssertTrue(isInvalid(r.int("c", in: 1...5000)))
        XCTAssertTrue(isInvalid(r.int("d", in: 1...5000)))
        XCTAssertTrue(isInvalid(r.int("e", in: 1...5000)))
        XCTAssertEqual(r.int("f", in: 1...5000).value, 250)
        XCTAssertEqual(r.int("g", in: 0...0).value, 0)
        XCTAssertTrue(isInvalid(r.int("h", in: 1...10)))
        XCTAssertEqual(r.errors.map(\.code), [.invalidType, .invalidType, .invalidType, .outOfRange, .outOfRange])
    }

    func testNumberRules() throws {
        var r = try reader(#"{"a": 62.5, "b": 62.25, "c": "62", "d": 1e400, "e": 6.25e1}"#)
        XCTAssertEqual(r.number("a", in: 20...400, maxDecimals: 1).value, 62.5)
        XCTAssertTrue(isInvalid(r.number("b", in: 20...400, maxDecimals: 1)))
        XCTAssertTrue(isInvalid(r.number("c", in: 20...400)))
        XCTAssertTrue(isInvalid(r.number("d", in: 20...400)))
        XCTAssertEqual(r.number("e", in: 20...400, maxDecimals: 1).value, 62.5)
        XCTAssertEqual(r.errors.map(\.code), [.invalidFormat, .invalidType, .outOfRange])
    }

    func testStringLengthsCountCharacters() throws {
        var r = try reader(#"{"a": "💧💧💧", "b": "💧💧💧💧", "c": "", "d": 3}"#)
        XCTAssertEqual(r.string("a", maxLength: 3).value, "💧💧💧")
        XCTAssertTrue(isInvalid(r.string("b", maxLength: 3)))
        XCTAssertTrue(isInvalid(r.string("c", minLength: 1, maxLength: 3)))
        XCTAssertTrue(isInvalid(r.string("d", maxLength: 3)))
        XCTAssertEqual(r.errors.map(\.code), [.tooLong, .required, .invalidType])
    }

    func testOneOfIsExact() throws {
        var r = try reader(#"{"a": "watch", "b": "Watch", "c": 1}"#)
        XCTAssertEqual(r.oneOf("a", ["phone", "watch"]).value, "watch")
        XCTAssertTrue(isInvalid(r.oneOf("b", ["phone", "watch"])))
        XCTAssertTrue(isInvalid(r.oneOf("c", ["phone", "watch"])))
        XCTAssertEqual(r.errors.map(\.code), [.invalidFormat, .invalidType])
    }

    /// Names and enum values are compared code point by code point (spec §1): a KELVIN SIGN
    /// name is an unknown field, not `weightKg`, and a Kelvin-sign value is not `K`.
    func testNamesAndValuesAreComparedByCodePoints() throws {
        var r = try reader(#"{"weight\u212Ag": 70, "unit": "\u212A"}"#)
        XCTAssertTrue(isAbsent(r.number("weightKg", in: 20...400)))
        XCTAssertTrue(isInvalid(r.oneOf("unit", ["K", "C"])))
        r.rejectOthers(writable: ["weightKg", "unit"], readOnly: ["createdAt"])
        XCTAssertEqual(r.errors.map(\.code), [.invalidFormat, .unknownField])
        XCTAssertEqual(r.errors.last?.pointer, "/weight\u{212A}g")
        var ascii = try reader(#"{"weight\u004Bg": 70, "unit": "\u004B"}"#)
        XCTAssertEqual(ascii.number("weightKg", in: 20...400).value, 70)
        XCTAssertEqual(ascii.oneOf("unit", ["K", "C"]).value, "K")
        ascii.rejectOthers(writable: ["weightKg", "unit"], readOnly: [])
        XCTAssertEqual(ascii.errors, [])
        var readOnly = try reader(#"{"created\u0041t": 1, "cre\u0061ted\u212At": 2}"#)
        readOnly.rejectOthers(writable: [], readOnly: ["createdAt", "createdKt"])
        XCTAssertEqual(readOnly.errors.map(\.code), [.readOnlyField, .unknownField])
    }

    func testPointersArePrefixedAndEscaped() throws {
        var r = try reader(#"{"a/b": 1, "c~d": 2, "ok": 3}"#, prefix: "/entries/4")
        XCTAssertEqual(r.pointer("x"), "/entries/4/x")
        r.rejectOthers(writable: ["ok"], readOnly: ["c~d"])
        XCTAssertEqual(
            r.errors,
            [
                FieldError("/entries/4/a~1b", .unknownField, "unknown field"),
                FieldError("/entries/4/c~0d", .readOnlyField, "read-only field"),
            ])
        r.fail(pointer: "/entries/4/list/0", .outOfRange, "limit")
        XCTAssertEqual(r.errors.last?.pointer, "/entries/4/list/0")
    }

    func testFieldErrorCodesAreTheDocumentedStrings() {
        XCTAssertEqual(
            [
                FieldErrorCode.required, .invalidType, .invalidFormat, .outOfRange, .tooLong, .unknownField,
                .readOnlyField,
            ].map(\.rawValue),
            [
                "required", "invalid_type", "invalid_format", "out_of_range", "too_long", "unknown_field",
                "read_only_field",
            ])
    }
}

final class ModelTests: XCTestCase {
    func testWaterEntryContentDefaults() {
        let c = WaterEntryContent(amountMl: 250, loggedAt: 0)
        XCTAssertEqual(c.source, .api)
        XCTAssertNil(c.healthKitUUID)
        XCTAssertNil(c.note)
    }

    func testWaterEntryKeepsItsFields() {
        let c = WaterEntryContent(amountMl: 250, loggedAt: 5, source: .watch, healthKitUUID: nil, note: "n")
        let e = WaterEntry(id: "i", userID: "u", content: c, createdAt: 1, updatedAt: 2, version: 3, deleted: true)
        XCTAssertEqual(e.id, "i")
        XCTAssertEqual(e.userID, "u")
        XCTAssertEqual(e.content, c)
        XCTAssertEqual(e.createdAt, 1)
        XCTAssertEqual(e.updatedAt, 2)
        XCTAssertEqual(e.version, 3)
        XCTAssertTrue(e.deleted)
    }

    func testNewProfileStampsTimesAndVersion() {
        let p = UserProfile(id: "u", email: "a@b.co", displayName: "Deniz", now: 42)
        XCTAssertEqual(p.createdAt, 42)
        XCTAssertEqual(p.updatedAt, 42)
        XCTAssertEqual(p.version, 1)
        XCTAssertEqual(p.displayName, "Deniz")
        XCTAssertEqual(p.email, "a@b.co")
        XCTAssertEqual(UserProfile.defaultCupSizesMl, [150, 250, 330, 500])
    }
}
