import XCTest

@testable import SuplashJSON

final class JSONParserTests: XCTestCase {
    private func parse(_ s: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try JSONParser.parse(Array(s.utf8), maxDepth: maxDepth)
    }

    private func reason(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError.Reason? {
        do {
            _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
            return nil
        } catch {
            return error.reason
        }
    }

    private func reason(_ s: String) -> JSONParseError.Reason? { reason(Array(s.utf8)) }

    func testValidDocuments() throws {
        let valid: [(String, JSONValue)] = [
            ("null", .null), ("true", .bool(true)), ("false", .bool(false)),
            ("0", .number(JSONNumber(validatedText: "0"))),
            ("-0", .number(JSONNumber(validatedText: "-0"))),
            (" \t\r\n 12 \n", .number(JSONNumber(validatedText: "12"))),
            ("1.5e+10", .number(JSONNumber(validatedText: "1.5e+10"))),
            ("-2.25E-3", .number(JSONNumber(validatedText: "-2.25E-3"))),
            ("1e400", .number(JSONNumber(validatedText: "1e400"))),
            ("\"\"", .string("")), ("\"abc\"", .string("abc")),
            ("[]", .array([])), ("{}", .object([])), ("[ ]", .array([])), ("{ }", .object([])),
            ("[1,[2,[3]]]", .array([.int(1), .array([.int(2), .array([.int(3)])])])),
            ("{\"b\":1,\"a\":[true,null]}", .object([("b", .int(1)), ("a", .array([.bool(true), .null]))])),
            ("{\"a\":{\"a\":{}}}", .object([("a", .object([("a", .object([]))]))])),
            ("\"héllo 😀 日本\"", .string("héllo 😀 日本")),
            ("[\"\",{}]", .array([.string(""), .object([])])),
        ]
        for (text, expected) in valid {
            XCTAssertEqual(try parse(text), expected, text)
        }
    }

    func testEveryEscape() throws {
        let text = #""\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC\ud83d\ude00\u0000""#
        XCTAssertEqual(try parse(text), .string("\"\\/\u{08}\u{0C}\n\r\tAé€😀\u{00}"))
        XCTAssertEqual(try parse(#"{"a\u0062":1}"#)["ab"], .int(1))
    }

    func testInvalidDocuments() {
        let invalid: [(String, JSONParseError.Reason)] = [
            ("", .unexpectedEnd), ("   ", .unexpectedEnd), ("[", .unexpectedEnd), ("[1,", .unexpectedEnd),
            ("{\"a\"", .unexpectedEnd), ("{\"a\":", .unexpectedEnd), ("\"abc", .unexpectedEnd),
            ("[1,]", .unexpectedByte), ("[,1]", .unexpectedByte), ("{,}", .unexpectedByte),
            ("{\"a\":1,}", .unexpectedByte), ("{\"a\" 1}", .unexpectedByte), ("{1:2}", .unexpectedByte),
            ("[1 2]", .unexpectedByte), ("{\"a\":1]", .unexpectedByte), ("[1}", .unexpectedByte),
            ("tru", .unexpectedEnd), ("trux", .unexpectedByte), ("nul", .unexpectedEnd), ("NaN", .unexpectedByte),
            ("Infinity", .unexpectedByte), ("-Infinity", .invalidNumber), ("'a'", .unexpectedByte),
            ("01", .invalidNumber), ("-01", .invalidNumber), ("+1", .invalidNumber), (".5", .invalidNumber),
            ("1.", .invalidNumber), ("1.e5", .invalidNumber), ("1e", .invalidNumber), ("1e+", .invalidNumber),
            ("-", .invalidNumber), ("0x10", .invalidNumber), ("1.5.2", .invalidNumber), ("[-]", .invalidNumber),
            ("{\"a\":1,\"a\":2}", .duplicateKey), ("{\"a\":1,\"\\u0061\":2}", .duplicateKey),
            ("1 2", .trailingData), ("{} x", .trailingData), ("null,", .trailingData), ("[]]", .trailingData),
            ("\"\\x\"", .invalidEscape), ("\"\\u12\"", .invalidEscape), ("\"\\u12G4\"", .invalidEscape),
            ("\"\\ud800\"", .invalidEscape), ("\"\\udc00\"", .invalidEscape), ("\"\\ud800\\u0041\"", .invalidEscape),
            ("\"\\ud800x\"", .invalidEscape), ("\"\\U0041\"", .invalidEscape),
            ("\"a\nb\"", .controlCharacter), ("\"\t\"", .controlCharacter), ("\"\u{0}\"", .controlCharacter),
            ("\"\\n\u{1F}\"", .controlCharacter),
        ]
        for (text, expected) in invalid {
            XCTAssertEqual(reason(text), expected, text.debugDescription)
        }
    }

    func testInvalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22],  // stray / overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // > U+10FFFF
            [0x22, 0xC3, 0x22], [0x22, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xFE, 0x22],  // truncated, continuation, after escape
            [0xFF], [0xFF, 0xFE, 0x5B, 0x5D], [0x5B, 0x5D, 0xFF],
        ]
        for bytes in cases {
            XCTAssertEqual(reason(bytes), .invalidUTF8, "\(bytes)")
        }
        // A UTF-8 byte order mark is well-formed UTF-8 but not allowed (RFC 8259 §8.1).
        XCTAssertEqual(reason([0xEF, 0xBB, 0xBF, 0x5B, 0x5D]), .unexpectedByte)
    }

    func testDepthLimit() {
        let deep = [UInt8](repeating: 0x5B, count: 10_000)
        XCTAssertEqual(reason(deep), .tooDeep)
        let deepObjects = Array(String(repeating: "{\"a\":", count: 10_000).utf8)
        XCTAssertEqual(reason(deepObjects), .tooDeep)
        let exactly64 = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try parse(exactly64))
        XCTAssertEqual(reason(Array(("[" + exactly64 + "]").utf8)), .tooDeep)
        XCTAssertEqual(reason(Array("[[1]]".utf8), maxDepth: 1), .tooDeep)
        XCTAssertNoThrow(try parse("5", maxDepth: 0))
        // Deep but allowed: parsed iteratively, no recursion in the reader.
        let veryDeep = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        XCTAssertNoThrow(try parse(veryDeep, maxDepth: 5_000))
    }

    func testErrorOffsetAndDescription() {
        do {
            _ = try parse("{\"secret\":1,\"secret\":2}")
            XCTFail("expected duplicate key")
        } catch {
            XCTAssertEqual(error.offset, 12)
            XCTAssertEqual(error.reason, .duplicateKey)
            XCTAssertFalse(error.description.contains("secret"))
        }
        do {
            _ = try parse("[1, x]")
            XCTFail("expected error")
        } catch {
            XCTAssertEqual(error.offset, 4)
        }
    }

    func testManyKeysUseSetAndStillDetectDuplicates() throws {
        var members = (0..<100).map { "\"k\($0)\":\($0)" }
        let ok = "{" + members.joined(separator: ",") + "}"
        XCTAssertEqual(try parse(ok).objectValue?.count, 100)
        members.append("\"k3\":0")
        XCTAssertEqual(reason("{" + members.joined(separator: ",") + "}"), .duplicateKey)
        members.removeLast()
        members.append("\"k99\":0")
        XCTAssertEqual(reason("{" + members.joined(separator: ",") + "}"), .duplicateKey)
    }

    /// Member names are duplicates only with the same code points (spec §1): U+212A KELVIN
    /// SIGN is canonically equivalent to `K` (Swift's `String ==` says equal) but is
    /// another name. An escaped ASCII letter (`\u004B`) is the same name.
    func testDuplicateNamesAreComparedByCodePoints() throws {
        let kelvin = try parse(#"{"weightKg":70,"weight\u212Ag":80}"#)
        XCTAssertEqual(kelvin.objectValue?.count, 2)
        XCTAssertEqual(kelvin["weightKg"], .number(JSONNumber(70)))
        XCTAssertEqual(kelvin["weight\u{212A}g"], .number(JSONNumber(80)))
        XCTAssertEqual(reason(#"{"weightKg":70,"weight\u004Bg":80}"#), .duplicateKey)
        // NFC and NFD spellings of a name are two names too.
        XCTAssertEqual(try parse(#"{"\u00e9":1,"e\u0301":2}"#).objectValue?.count, 2)
        // The same with more members than the linear scan handles (the hash-set path).
        var members = (0..<20).map { "\"k\($0)\":\($0)" }
        members.append(#""weightKg":1"#)
        members.append(#""weight\u212Ag":2"#)
        XCTAssertEqual(try parse("{" + members.joined(separator: ",") + "}").objectValue?.count, 22)
        members.append(#""weight\u004Bg":3"#)
        XCTAssertEqual(reason("{" + members.joined(separator: ",") + "}"), .duplicateKey)
    }

    func testValuesAndLookupsCompareCodePoints() throws {
        XCTAssertNotEqual(JSONValue.string("\u{212A}"), JSONValue.string("K"))
        XCTAssertNotEqual(JSONValue.string("e\u{301}"), JSONValue.string("\u{E9}"))
        XCTAssertNil(try parse(#"{"weight\u212Ag":1}"#)["weightKg"])
        XCTAssertNotEqual(try parse(#"{"weight\u212Ag":1}"#), try parse(#"{"weightKg":1}"#))
        XCTAssertNotEqual(Set([CodePointKey("\u{212A}"), CodePointKey("K")]).count, 1)
        let built = String("xweightKg".dropFirst())
        XCTAssertEqual(Set([CodePointKey(built), CodePointKey("weightKg")]).count, 1)
        XCTAssertTrue("weightKg".dropFirst(0).hasSameCodePoints(as: built))
        XCTAssertFalse("weightK".hasSameCodePoints(as: built))
        XCTAssertFalse("weightKh".hasSameCodePoints(as: built))
        XCTAssertFalse("weight\u{212A}g".hasSameCodePoints(as: built))
        XCTAssertTrue("K".hasSameCodePoints(as: "\u{4B}"))
        XCTAssertFalse("K".hasSameCodePoints(as: "\u{212A}"))
    }

    func testNonContiguousAndStringInputs() throws {
        let bytes = Array("{\"a\":[1,2]}".utf8)
        XCTAssertEqual(try JSONParser.parse(bytes.lazy.map { $0 }), try JSONParser.parse(bytes))
        XCTAssertEqual(try JSONParser.parse(bytes[...]), try JSONParser.parse("{\"a\":[1,2]}"))
        let slice = Array("xx[true]yy".utf8)[2..<8]
        XCTAssertEqual(try JSONParser.parse(slice), .array([.bool(true)]))
    }
}

final class JSONNumberTests: XCTestCase {
    func testSemanticsTable() {
        // text, int64Value, doubleValue, decimalPlaces, isIntegral
        let table: [(String, Int64?, Double?, Int, Bool)] = [
            ("250", 250, 250, 0, true),
            ("250.0", 250, 250, 0, true),
            ("2.5e2", 250, 250, 0, true),
            ("25000e-2", 250, 250, 0, true),
            ("1e2", 100, 100, 0, true),
            ("1E+2", 100, 100, 0, true),
            ("2.5", nil, 2.5, 1, false),
            ("-0.5", nil, -0.5, 1, false),
            ("1e400", nil, nil, 0, true),
            ("-1e400", nil, nil, 0, true),
            ("1e-400", nil, 0, 400, false),
            ("-0", 0, -0.0, 0, true),
            ("0.000", 0, 0, 0, true),
            ("0e99999999999999999999", 0, 0, 0, true),
            ("1.2500", nil, 1.25, 2, false),
            ("1e-3", nil, 0.001, 3, false),
            ("0.125e1", nil, 1.25, 2, false),
            ("0.05", nil, 0.05, 2, false),
            ("123.456", nil, 123.456, 3, false),
            ("9223372036854775807", Int64.max, 0x1p63, 0, true),
            ("-9223372036854775808", Int64.min, -0x1p63, 0, true),
            ("9223372036854775808", nil, 0x1p63, 0, true),
            ("-9223372036854775809", nil, -0x1p63, 0, true),
            ("92233720368547758.07e2", Int64.max, 0x1p63, 0, true),
            ("100000000000000000000", nil, 1e20, 0, true),
            ("1e18", 1_000_000_000_000_000_000, 1e18, 0, true),
            ("1e19", nil, 1e19, 0, true),
            ("-12", -12, -12, 0, true),
        ]
        for (text, int64, double, places, integral) in table {
            let n = JSONNumber(validatedText: text)
            XCTAssertEqual(n.int64Value, int64, "int64Value of \(text)")
            XCTAssertEqual(n.doubleValue, double, "doubleValue of \(text)")
            XCTAssertEqual(n.decimalPlaces, places, "decimalPlaces of \(text)")
            XCTAssertEqual(n.isIntegral, integral, "isIntegral of \(text)")
        }
    }

    func testGrammar() {
        for good in ["0", "-0", "1", "-1.5", "1e5", "1E-5", "1.0e+5", "10", "0.0"] {
            XCTAssertNotNil(JSONNumber(text: good), good)
        }
        for bad in ["", "-", "01", "+1", ".5", "1.", "1e", "NaN", "inf", "1 ", "0x1", "1.5.5"] {
            XCTAssertNil(JSONNumber(text: bad), bad)
        }
    }

    func testDoubleInitializers() {
        XCTAssertEqual(JSONNumber(62.5).text, "62.5")
        XCTAssertEqual(JSONNumber(250.0).text, "250")
        XCTAssertNil(JSONNumber(exactly: .nan))
        XCTAssertNil(JSONNumber(exactly: .infinity))
        XCTAssertEqual(JSONValue.double(.infinity), .null)
        XCTAssertEqual(JSONNumber(.nan).int64Value, nil)
        XCTAssertNotNil(JSONNumber(text: JSONNumber(0.000001).text))
        XCTAssertNotNil(JSONNumber(text: JSONNumber(1e300).text))
    }
}

final class JSONSerializationTests: XCTestCase {
    func testCompactOutputInStoredOrder() {
        let v: JSONValue = ["z": 1, "a": [true, false, nil], "m": ["x": "y"], "n": 2.5, "s": .int(-3)]
        XCTAssertEqual(v.serializedString(), #"{"z":1,"a":[true,false,null],"m":{"x":"y"},"n":2.5,"s":-3}"#)
        XCTAssertEqual(JSONValue.number(JSONNumber(validatedText: "2.50e1")).serializedString(), "2.50e1")
    }

    func testStringEscaping() throws {
        let s = "q\"b\\s/\u{00}\u{01}\n\r\t\u{1F}\u{7F}é😀\u{2028}"
        let out = JSONValue.string(s).serializedString()
        XCTAssertEqual(out, "\"q\\\"b\\\\s/\\u0000\\u0001\\u000a\\u000d\\u0009\\u001f\u{7F}é😀\u{2028}\"")
        XCTAssertEqual(try JSONParser.parse(out), .string(s))
        for c in 0..<0x20 {
            let text = JSONValue.string(String(UnicodeScalar(UInt8(c)))).serializedString()
            XCTAssertEqual(text.utf8.count, 8, "\(c)")
            XCTAssertEqual(try JSONParser.parse(text), .string(String(UnicodeScalar(UInt8(c)))))
        }
    }

    func testRoundTrip() throws {
        let docs = [
            #"{"a":[1,2.5,-0,1e400,"x\u0000y"],"b":{"c":null,"d":true},"e":"😀\"\\","f":[],"g":{}}"#,
            #"[[[[[]]]],{"":""}]"#,
            #""plain""#,
        ]
        for doc in docs {
            let value = try JSONParser.parse(doc)
            let bytes = value.serialized()
            XCTAssertEqual(try JSONParser.parse(bytes), value, doc)
            // Serialization is a fixed point after one round.
            XCTAssertEqual(try JSONParser.parse(bytes).serialized(), bytes)
        }
        XCTAssertEqual(JSONValue.string("x").serialized(), Array("\"x\"".utf8))
    }

    func testPointerEscape() {
        XCTAssertEqual(JSONPointer.escape("a/b~c"), "a~1b~0c")
        XCTAssertEqual(JSONPointer.escape("~1"), "~01")
        XCTAssertEqual(JSONPointer.escape("amountMl"), "amountMl")
        XCTAssertEqual(JSONPointer.escape(""), "")
        XCTAssertEqual(JSONPointer.pointer(["entries", "0", "a/b"]), "/entries/0/a~1b")
        XCTAssertEqual(JSONPointer.pointer([]), "")
    }

    func testAccessors() {
        let v: JSONValue = ["n": 250.0, "b": true, "a": [1]]
        XCTAssertEqual(v["n"]?.int64Value, 250)
        XCTAssertNil(v["b"]?.int64Value)
        XCTAssertEqual(v["b"]?.boolValue, true)
        XCTAssertEqual(v["a"]?.arrayValue?.count, 1)
        XCTAssertNil(v["missing"])
        XCTAssertEqual(JSONValue.optional(nil), .null)
    }
}
