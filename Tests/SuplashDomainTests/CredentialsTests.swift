import SuplashDomain
import SuplashJSON
import XCTest

final class EmailTests: XCTestCase {
    func testTrimmedAndLowercased() {
        XCTAssertEqual(Credentials.normalizedEmail("user@example.com"), "user@example.com")
        XCTAssertEqual(Credentials.normalizedEmail("  USER@Example.COM "), "user@example.com")
        XCTAssertEqual(Credentials.normalizedEmail("\tUser.Name+tag@Sub.Example.com\r\n"), "user.name+tag@sub.example.com")
        XCTAssertEqual(Credentials.normalizedEmail("\u{00A0}a@b.co\u{3000}"), "a@b.co", "Unicode spaces are trimmed too")
    }

    func testUnicodeLowercasingIsDefaultCaseMappingAndConsistent() throws {
        // Whatever Swift's locale-independent lowercased() does, normalisation must be that,
        // and must be idempotent so that stored emails compare equal to re-normalised input.
        for raw in [
            "İSTANBUL@örnek.com.tr", "ıi@x.tr", "ÇĞÖŞÜ@x.tr", "STRAẞE@beispiel.de", "straße@beispiel.de",
            "ΣΊΣΥΦΟΣ@παράδειγμα.gr", "ǅ@x.com",
        ] {
            let once = try XCTUnwrap(Credentials.normalizedEmail(raw), raw)
            XCTAssertEqual(once, raw.lowercased(), raw)
            XCTAssertEqual(Credentials.normalizedEmail(once), once, "idempotent: \(raw)")
            XCTAssertEqual(
                Credentials.normalizedEmail(raw.uppercased()).map { Credentials.normalizedEmail($0) } ?? nil,
                Credentials.normalizedEmail(raw.uppercased()), raw)
        }
        // Upper- and lower-case spellings of the same address meet.
        XCTAssertEqual(Credentials.normalizedEmail("ÇĞÖŞÜ@X.TR"), Credentials.normalizedEmail("çğöşü@x.tr"))
        XCTAssertEqual(Credentials.normalizedEmail("İ@x.tr"), Credentials.normalizedEmail("i\u{307}@x.tr"))
        XCTAssertEqual(Credentials.normalizedEmail("ẞ@x.de"), Credentials.normalizedEmail("ß@x.de"))
        // Not locale-specific: capital I is "i", not dotless "ı" as the Turkish locale would give.
        XCTAssertEqual(Credentials.normalizedEmail("I@X.TR"), "i@x.tr")
    }

    /// NFC and NFD spellings of one address are one account: the normalised email is NFC,
    /// byte for byte, so the database's unique index on the bytes sees one value.
    func testNFCAndNFDSpellingsNormaliseToTheSameBytes() throws {
        let nfc = try XCTUnwrap(Credentials.normalizedEmail("ay\u{15F}e@\u{F6}rnek.com.tr"))
        let nfd = try XCTUnwrap(Credentials.normalizedEmail("ays\u{327}e@o\u{308}rnek.com.tr"))
        XCTAssertTrue(nfc.hasSameCodePoints(as: nfd), "one address, one byte sequence")
        XCTAssertEqual(Array(nfd.utf8), Array("ay\u{15F}e@\u{F6}rnek.com.tr".utf8))
        // Upper-case NFD too (lower-casing first can leave combining marks to compose).
        XCTAssertTrue(try XCTUnwrap(Credentials.normalizedEmail("AYS\u{327}E@O\u{308}RNEK.COM.TR")).hasSameCodePoints(as: nfc))
    }

    func testShapeRules() {
        let good = ["a@b.co", "a.b@c.d.e", "x+y@example.com", "ali@örnek.com.tr", "\"quoted\"@x.com", "a@b-c.d"]
        for email in good {
            XCTAssertNotNil(Credentials.normalizedEmail(email), email)
        }
        let bad = [
            "", "   ", "not-an-email", "bad", "@example.com", "user@", "user@example", "user@@example.com",
            "us@er@example.com", "user@.example.com", "user@example.com.", "user@example..com", "user@.",
            "user name@example.com", "user@exa mple.com", "user\t@example.com", "user\u{0}@example.com",
            "user\u{7F}@example.com", "user\u{200B}@example.com", "user\u{00A0}x@example.com", "user\n@example.com",
            "user@example.com\u{1}",
        ]
        for email in bad {
            XCTAssertNil(Credentials.normalizedEmail(email), email.debugDescription)
        }
    }

    func testLengthLimitIs254Characters() {
        let domain = "@example.com"  // 12 characters
        let ok = String(repeating: "a", count: 254 - 12) + domain
        XCTAssertEqual(ok.count, 254)
        XCTAssertEqual(Credentials.normalizedEmail(ok), ok)
        XCTAssertNil(Credentials.normalizedEmail("a" + ok))
        // Surrounding whitespace does not count.
        XCTAssertEqual(Credentials.normalizedEmail("  " + ok + "  "), ok)
        // Characters, not bytes: 242 "ö" are 484 bytes but 242 characters.
        let wide = String(repeating: "ö", count: 242) + domain
        XCTAssertEqual(Credentials.normalizedEmail(wide), wide)
        XCTAssertNil(Credentials.normalizedEmail("ö" + wide))
    }
}

final class PasswordTests: XCTestCase {
    func testNFKC() {
        XCTAssertEqual(Credentials.normalizedPassword("ｐａｓｓｗｏｒｄ１"), "password1")
        XCTAssertEqual(Credentials.normalizedPassword("password1"), "password1")
        // Composed and decomposed spellings meet.
        XCTAssertEqual(Credentials.normalizedPassword("s\u{0327}ifre123"), Credentials.normalizedPassword("şifre123"))
        XCTAssertEqual(Credentials.normalizedPassword("s\u{0327}ifre123"), "şifre123")
        // Compatibility characters fold: ligature "ﬁ", Roman numeral "Ⅻ", superscript "²".
        XCTAssertEqual(Credentials.normalizedPassword("ﬁⅫ²"), "fiXII2")
        // Case is preserved; spaces are kept (NIST: all printing characters and spaces allowed).
        XCTAssertEqual(Credentials.normalizedPassword("Long Enough Pw"), "Long Enough Pw")
        // Idempotent.
        let once = Credentials.normalizedPassword("ｐａｓｓ ｗｏｒｄ ＡＢＣ ﬁ")
        XCTAssertEqual(Credentials.normalizedPassword(once), once)
    }

    func testLengthIs8To256Characters() {
        XCTAssertFalse(Credentials.isAcceptablePassword(""))
        XCTAssertFalse(Credentials.isAcceptablePassword("1234567"))
        XCTAssertTrue(Credentials.isAcceptablePassword("12345678"))
        XCTAssertTrue(Credentials.isAcceptablePassword(String(repeating: "p", count: 256)))
        XCTAssertFalse(Credentials.isAcceptablePassword(String(repeating: "p", count: 257)))
        // Characters, not bytes.
        XCTAssertTrue(Credentials.isAcceptablePassword(String(repeating: "🔑", count: 8)))
        XCTAssertFalse(Credentials.isAcceptablePassword(String(repeating: "🔑", count: 7)))
        XCTAssertTrue(Credentials.isAcceptablePassword(String(repeating: "ş", count: 256)))
    }
}

final class SignUpLoginTests: XCTestCase {
    private func signUpErrors(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [FieldError] {
        let body = try json(text, file: file, line: line)
        return fieldErrors(
            { () throws(ValidationFailure) -> Credentials.SignUp in
                try Credentials.signUp(body)
            }, file: file, line: line)
    }

    func testValidSignUpIsNormalised() throws {
        let s = try Credentials.signUp(json(#"{"email": "  Ayse@Example.COM ", "password": "ｐａｓｓｗｏｒｄ１", "displayName": "Ayşe"}"#))
        XCTAssertEqual(s.email, "ayse@example.com")
        XCTAssertEqual(s.password, "password1")
        XCTAssertEqual(s.displayName, "Ayşe")
        let minimal = try Credentials.signUp(json(#"{"email": "a@b.co", "password": "long enough pw"}"#))
        XCTAssertNil(minimal.displayName)
        XCTAssertEqual(minimal.password, "long enough pw")
    }

    func testBothBadFieldsAreReported() throws {
        XCTAssertEqual(
            codesByPointer(try signUpErrors(#"{"email": "bad", "password": "x"}"#)),
            ["/email": .invalidFormat, "/password": .outOfRange])
        XCTAssertEqual(codesByPointer(try signUpErrors("{}")), ["/email": .required, "/password": .required])
        XCTAssertEqual(
            codesByPointer(try signUpErrors(#"{"email": null, "password": null}"#)),
            ["/email": .required, "/password": .required])
        XCTAssertEqual(
            codesByPointer(try signUpErrors(#"{"email": 1, "password": false}"#)),
            ["/email": .invalidType, "/password": .invalidType])
    }

    func testSingleBadField() throws {
        assertSingleError(try signUpErrors(#"{"email": "not-an-email", "password": "long enough pw"}"#), "/email", .invalidFormat)
        assertSingleError(try signUpErrors(#"{"email": "a@x.test", "password": "short"}"#), "/password", .outOfRange)
        let long = String(repeating: "p", count: 257)
        assertSingleError(try signUpErrors(#"{"email": "a@x.test", "password": "\#(long)"}"#), "/password", .tooLong)
        assertSingleError(
            try signUpErrors(#"{"email": "a@x.test", "password": "long enough pw", "displayName": "\#(String(repeating: "d", count: 81))"}"#),
            "/displayName", .tooLong)
        assertSingleError(
            try signUpErrors(#"{"email": "a@x.test", "password": "long enough pw", "admin": true}"#),
            "/admin", .unknownField)
        assertSingleError(try signUpErrors("[]"), "", .invalidType)
    }

    func testPasswordLengthIsMeasuredAfterNFKC() throws {
        // "ﬀ" (1 character) becomes "ff" (2) under NFKC: 4 ligatures are 8 characters after normalisation.
        let s = try Credentials.signUp(json(#"{"email": "a@x.test", "password": "ﬀﬀﬀﬀ"}"#))
        XCTAssertEqual(s.password, "ffffffff")
        assertSingleError(try signUpErrors(#"{"email": "a@x.test", "password": "ﬀﬀﬀ"}"#), "/password", .outOfRange)
    }

    func testErrorMessagesDoNotEchoInput() throws {
        for e in try signUpErrors(#"{"email": "secret-address", "password": "secret"}"#) {
            XCTAssertFalse(e.message.contains("secret"), e.message)
        }
    }

    func testLogin() throws {
        let ok = try Credentials.login(json(#"{"email": " A@B.CO ", "password": "ｐａｓｓｗｏｒｄ１"}"#))
        XCTAssertEqual(ok.email, "a@b.co")
        XCTAssertEqual(ok.password, "password1")
        // An impossible email is not a validation error: it simply matches no account.
        let impossible = try Credentials.login(json(#"{"email": "bad", "password": "x"}"#))
        XCTAssertNil(impossible.email)
        XCTAssertEqual(impossible.password, "x")
        let missing = try json("{}")
        let e = fieldErrors({ () throws(ValidationFailure) -> (email: String?, password: String) in
            try Credentials.login(missing)
        })
        XCTAssertEqual(codesByPointer(e), ["/email": .required, "/password": .required])
    }
}
