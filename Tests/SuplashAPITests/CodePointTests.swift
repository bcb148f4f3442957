import Foundation
import SuplashJSON
import XCTest

@testable import SuplashAPI

/// Spec §1 over HTTP: field names, enum values and query names are compared code point by
/// code point (U+212A KELVIN SIGN is not `K`); emails are one account in NFC and NFD.
final class CodePointTests: XCTestCase {
    private func send(_ s: TestServer, _ method: String, _ path: String, _ body: String, token: String) throws -> TestResponse {
        try s.request(method, path, body: Array(body.utf8), token: token, headers: [("Content-Type", "application/json")])
    }

    private func assertUnknownField(_ r: TestResponse, _ pointer: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 422, r.text, file: file, line: line)
        XCTAssertEqual(r.json?["code"]?.stringValue, "validation_failed", file: file, line: line)
        guard case .array(let errors)? = r.json?["errors"] else { return XCTFail("no errors[]", file: file, line: line) }
        XCTAssertEqual(errors.count, 1, r.text, file: file, line: line)
        XCTAssertEqual(errors.first?["code"]?.stringValue, "unknown_field", file: file, line: line)
        XCTAssertEqual(errors.first?["pointer"]?.stringValue, pointer, file: file, line: line)
    }

    func testKelvinSignFieldNamesAreUnknownFields() throws {
        let s = try TestServer()
        defer { s.stop() }
        let u = try s.signUp()
        // Escaped and raw UTF-8 spellings of U+212A.
        assertUnknownField(try send(s, "PATCH", "/v1/users/me", #"{"weight\u212Ag":70}"#, token: u.token), "/weight\u{212A}g")
        assertUnknownField(try send(s, "PATCH", "/v1/users/me", "{\"weight\u{212A}g\":70}", token: u.token), "/weight\u{212A}g")
        // Not a duplicate of weightKg either (400 malformed_json before), and nothing is written.
        assertUnknownField(
            try send(s, "PATCH", "/v1/users/me", #"{"weightKg":70,"weight\u212Ag":80}"#, token: u.token),
            "/weight\u{212A}g")
        let profile = try s.request("GET", "/v1/users/me", token: u.token)
        XCTAssertEqual(profile.json?["weightKg"], .null)
        // An escaped ASCII K is the same name.
        let ascii = try send(s, "PATCH", "/v1/users/me", #"{"weight\u004Bg":70}"#, token: u.token)
        XCTAssertEqual(ascii.status, 200, ascii.text)
        if case .number(let weight)? = ascii.json?["weightKg"] { XCTAssertEqual(weight.doubleValue, 70) } else { XCTFail(ascii.text) }
        XCTAssertEqual(
            try send(s, "PATCH", "/v1/users/me", #"{"weightKg":70,"weight\u004Bg":80}"#, token: u.token).json?["code"]?
                .stringValue, "malformed_json", "a real duplicate stays a 400")

        let entry = #"{"amountMl":250,"loggedAt":"2026-01-15T07:30:00Z","health\u212AitUUID":"0192f6e4-1c2b-7a3d-8e4f-5a6b7c8d9e0f"}"#
        assertUnknownField(try send(s, "POST", "/v1/water_logs/me/entries", entry, token: u.token), "/health\u{212A}itUUID")
    }

    func testKelvinSignTimeZoneIsNotTheCachedASCIIOne() throws {
        let zones = TimeZoneDatabase()
        XCTAssertTrue(zones.isKnown("Europe/Kiev"))
        XCTAssertFalse(zones.isKnown("Europe/\u{212A}iev"), "the cache answered for a canonically equivalent id")

        let s = try TestServer()
        defer { s.stop() }
        let u = try s.signUp()
        XCTAssertEqual(try send(s, "PATCH", "/v1/users/me", #"{"timezone":"Europe/Kiev"}"#, token: u.token).status, 200)
        let kelvin = try send(s, "PATCH", "/v1/users/me", #"{"timezone":"Europe/\u212Aiev"}"#, token: u.token)
        XCTAssertEqual(kelvin.status, 422, kelvin.text)
        XCTAssertEqual(
            kelvin.json?["errors"].flatMap { if case .array(let a) = $0 { a.first } else { nil } }?["pointer"]?
                .stringValue, "/timezone")
    }

    func testQueryNamesAreComparedByCodePoints() throws {
        let s = try TestServer()
        defer { s.stop() }
        let u = try s.signUp()
        // `xK` and `x<KELVIN SIGN>` are two names, not one name given twice.
        let r = try s.request("GET", "/v1/water_logs/me/entries?xK=1&x%E2%84%AA=2", token: u.token)
        XCTAssertEqual(r.status, 200, r.text)
        let repeated = try s.request("GET", "/v1/water_logs/me/entries?xK=1&x%4B=2", token: u.token)
        XCTAssertEqual(repeated.status, 400)
        XCTAssertEqual(repeated.json?["code"]?.stringValue, "invalid_query")
    }

    func testQueryParsingSplitsOnBytesAndDecodesEscapes() throws {
        let q = try APIRequest.parseQuery("&&a=1&b=%41%e2%84%aa&c&d=x=y&=e&f=")
        XCTAssertEqual(q["a"], "1")
        XCTAssertEqual(q["b"], "A\u{212A}")
        XCTAssertEqual(q["c"], "")
        XCTAssertEqual(q["d"], "x=y")
        XCTAssertEqual(q[""], "e")
        XCTAssertEqual(q["f"], "")
        XCTAssertEqual(try APIRequest.parseQuery("\u{131}=\u{15F}")["\u{131}"], "\u{15F}")
        XCTAssertTrue(try APIRequest.parseQuery(nil).isEmpty)
        for bad in ["a=%", "a=%4", "a=%zz", "%4=1", "a=%FF", "a=1&a=2"] {
            XCTAssertThrowsError(try APIRequest.parseQuery(bad), bad)
        }
    }

    /// Emails are normalised to NFC at input on purpose: the NFD spelling of an address is the
    /// same account (409 on a second signup, and it logs in).
    func testNFCAndNFDEmailsAreOneAccount() throws {
        let s = try TestServer()
        defer { s.stop() }
        let tag = UUID().uuidString.prefix(8).lowercased()
        let nfc = "ay\u{15F}e.\(tag)@\u{F6}rnek.com.tr"
        let nfd = "ays\u{327}e.\(tag)@o\u{308}rnek.com.tr"
        XCTAssertNotEqual(Array(nfc.utf8), Array(nfd.utf8))
        let first = try s.request(
            "POST", "/v1/auth/signup",
            json: ["email": .string(nfd), "password": .string("correct horse battery")])
        XCTAssertEqual(first.status, 201, first.text)
        XCTAssertEqual(first.json?["user"]?["email"]?.stringValue.map { Array($0.utf8) }, Array(nfc.utf8), "stored as NFC")
        let second = try s.request(
            "POST", "/v1/auth/signup",
            json: ["email": .string(nfc), "password": .string("correct horse battery")])
        XCTAssertEqual(second.status, 409)
        XCTAssertEqual(second.json?["code"]?.stringValue, "email_taken")
        for spelling in [nfc, nfd] {
            let login = try s.request(
                "POST", "/v1/auth/login",
                json: ["email": .string(spelling), "password": .string("correct horse battery")])
            XCTAssertEqual(login.status, 200, login.text)
            XCTAssertEqual(login.json?["user"]?["id"], first.json?["user"]?["id"])
        }
    }
}
