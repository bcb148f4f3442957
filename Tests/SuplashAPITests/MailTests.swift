import Foundation
import SuplashAPI
import SuplashDomain
import SuplashHTTP
import SuplashJSON
import SuplashLogging
import XCTest

/// Reads the `.eml` files of the file transport (`<dataDir>/mail`).
enum MailFiles {
    /// `(file name, text)` of every message to `recipient`, oldest first (names are UUIDv7).
    static func messages(dataDir: String, to recipient: String) -> [(String, String)] {
        let dir = dataDir + "/mail"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
        return names.compactMap { name in
            guard let text = try? String(contentsOfFile: dir + "/" + name, encoding: .utf8),
                text.contains("\r\nTo: \(recipient)\r\n")
            else { return nil }
            return (name, text)
        }
    }

    /// The six-digit code of the newest message to `recipient` beyond the first `after`,
    /// waiting up to `wait` seconds for it.
    static func latestCode(dataDir: String, to recipient: String, after: Int = 0, wait: Double = 5) -> String? {
        let deadline = Date(timeIntervalSinceNow: wait)
        repeat {
            let all = messages(dataDir: dataDir, to: recipient)
            if all.count > after, let text = all.last?.1, let code = sixDigits(body(text)).last { return code }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return nil
    }

    /// The body of an `.eml` (after the blank line), where the code is; headers hold ids
    /// (Message-ID, the address) that may contain six-digit runs.
    static func body(_ eml: String) -> String {
        guard let range = eml.range(of: "\r\n\r\n") else { return "" }
        return String(eml[range.upperBound...])
    }

    static func sixDigits(_ text: String) -> [String] {
        let words = text.split(whereSeparator: { !$0.isNumber })
        return words.filter { $0.count == 6 }.map(String.init)
    }
}

/// Email codes end to end with the file transport (spec §3).
final class EmailCodeIntegrationTests: XCTestCase {
    nonisolated(unsafe) static var server: TestServer?

    override class func setUp() { server = try? TestServer() }

    override class func tearDown() {
        server?.stop()
        server = nil
    }

    func srv() throws -> TestServer { try XCTUnwrap(Self.server, "server did not start") }

    func testSignupMailsACodeThatVerifiesTheEmail() throws {
        let s = try srv()
        let u = try s.signUp()
        // Signup normally answers after the first delivery attempt; allow for a loaded machine.
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, wait: 10))
        let mails = MailFiles.messages(dataDir: s.dataDir, to: u.email)
        XCTAssertEqual(mails.count, 1)
        let (name, text) = try XCTUnwrap(mails.first)
        let attributes = try FileManager.default.attributesOfItem(atPath: s.dataDir + "/mail/" + name)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let dirAttributes = try FileManager.default.attributesOfItem(atPath: s.dataDir + "/mail")
        XCTAssertEqual((dirAttributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        XCTAssertTrue(text.contains("Subject: =?UTF-8?B?"), "the default profile locale is tr-TR: a Turkish subject")
        XCTAssertTrue(text.contains("doğrulamak"), text)
        XCTAssertTrue(text.contains("Content-Type: text/plain; charset=utf-8"))
        let code = try XCTUnwrap(MailFiles.sixDigits(MailFiles.body(text)).first)
        XCTAssertEqual(MailFiles.sixDigits(MailFiles.body(text)).count, 1, "the code is the only six-digit number")

        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: u.token).json?["emailVerified"]?.boolValue, false)
        let wrong = try s.request("POST", "/v1/auth/email/verify", json: ["code": code == "000000" ? "111111" : "000000"], token: u.token)
        XCTAssertEqual(wrong.status, 422)
        XCTAssertEqual(wrong.json?["code"]?.stringValue, "invalid_code")
        let malformed = try s.request("POST", "/v1/auth/email/verify", json: ["code": "12ab56"], token: u.token)
        XCTAssertEqual(malformed.status, 422)
        XCTAssertEqual(malformed.json?["code"]?.stringValue, "validation_failed")
        XCTAssertEqual(try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(code)]).status, 401)
        let ok = try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(code)], token: u.token)
        XCTAssertEqual(ok.status, 204, ok.text)
        let profile = try s.request("GET", "/v1/users/me", token: u.token).json
        XCTAssertEqual(profile?["emailVerified"]?.boolValue, true)
        XCTAssertEqual(profile?["version"]?.int64Value, 2, "verification is a profile write")
        XCTAssertEqual(try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(code)], token: u.token).status, 204)
        let resend = try s.request("POST", "/v1/auth/email/resend", token: u.token)
        XCTAssertEqual(resend.status, 409)
        XCTAssertEqual(resend.json?["code"]?.stringValue, "email_already_verified")
    }

    func testResendIsLimitedToOncePerMinute() throws {
        let s = try srv()
        let u = try s.signUp()
        let r = try s.request("POST", "/v1/auth/email/resend", token: u.token)
        XCTAssertEqual(r.status, 429)
        XCTAssertEqual(r.json?["code"]?.stringValue, "code_resend_too_soon")
        XCTAssertGreaterThan(Int(r.header("Retry-After") ?? "") ?? 0, 55)
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, wait: 10))
        XCTAssertEqual(MailFiles.messages(dataDir: s.dataDir, to: u.email).count, 1)
    }

    func testFiveWrongCodesVoidTheCode() throws {
        let s = try srv()
        let u = try s.signUp()
        let code = try XCTUnwrap(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, wait: 10))
        let wrong = code == "999999" ? "999998" : "999999"
        var details: [String] = []
        for _ in 0..<5 {
            let r = try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(wrong)], token: u.token)
            XCTAssertEqual(r.status, 422)
            details.append(r.json?["detail"]?.stringValue ?? "")
        }
        XCTAssertTrue(details[0].contains("4 attempts left"), details[0])
        XCTAssertTrue(details[4].contains("void"), details[4])
        let late = try s.request("POST", "/v1/auth/email/verify", json: ["code": .string(code)], token: u.token)
        XCTAssertEqual(late.status, 422, "the right code no longer works after five wrong ones")
    }

    func testPasswordResetRevokesEverySessionAtOnce() throws {
        let s = try srv()
        let u = try s.signUp(password: "old password 123")
        let second = try s.request("POST", "/v1/auth/login", json: ["email": .string(u.email), "password": "old password 123"])
        let access2 = try XCTUnwrap(second.json?["session"]?["accessToken"]?.stringValue)
        let refresh2 = try XCTUnwrap(second.json?["session"]?["refreshToken"]?.stringValue)
        XCTAssertNotNil(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, wait: 10), "the signup mail")
        let before = MailFiles.messages(dataDir: s.dataDir, to: u.email).count

        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": .string(u.email)]).status, 202)
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": .string("nobody-\(UUID())@example.test")]).status, 202)
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["email": "not an email"]).status, 202)
        XCTAssertEqual(try s.request("POST", "/v1/auth/password/forgot", json: ["mail": "x"]).status, 422)
        let code = try XCTUnwrap(MailFiles.latestCode(dataDir: s.dataDir, to: u.email, after: before, wait: 10))
        XCTAssertTrue(MailFiles.messages(dataDir: s.dataDir, to: u.email).last?.1.contains("sıfırlamak") ?? false)

        let wrong = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": .string(u.email), "code": code == "000000" ? "111111" : "000000", "newPassword": "new password 456"])
        XCTAssertEqual(wrong.status, 422)
        XCTAssertEqual(wrong.json?["code"]?.stringValue, "invalid_code")
        let unknown = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": "nobody@example.test", "code": .string(code), "newPassword": "new password 456"])
        XCTAssertEqual(unknown.status, 422)
        XCTAssertEqual(unknown.json?["code"]?.stringValue, "invalid_code", "unknown accounts fail the same way")
        let short = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": .string(u.email), "code": .string(code), "newPassword": "short"])
        XCTAssertEqual(short.json?["code"]?.stringValue, "validation_failed")

        let reset = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": .string(u.email), "code": .string(code), "newPassword": "new password 456"])
        XCTAssertEqual(reset.status, 204, reset.text)
        for token in [u.token, access2] {
            XCTAssertEqual(try s.request("GET", "/v1/users/me", token: token).status, 401, "access tokens die at once")
        }
        for refresh in [u.refresh, refresh2] {
            XCTAssertEqual(try s.request("POST", "/v1/auth/refresh", json: ["refreshToken": .string(refresh)]).status, 401)
        }
        let old = try s.request("POST", "/v1/auth/login", json: ["email": .string(u.email), "password": "old password 123"])
        XCTAssertEqual(old.status, 401)
        let fresh = try s.request("POST", "/v1/auth/login", json: ["email": .string(u.email), "password": "new password 456"])
        XCTAssertEqual(fresh.status, 200)
        let token = try XCTUnwrap(fresh.json?["session"]?["accessToken"]?.stringValue)
        XCTAssertEqual(try s.request("GET", "/v1/users/me", token: token).status, 200, "a session made right after the reset works")
        XCTAssertEqual(
            try s.request("GET", "/v1/users/me", token: token).json?["emailVerified"]?.boolValue, true,
            "a reset code also proves the mailbox")
        let reuse = try s.request(
            "POST", "/v1/auth/password/reset",
            json: ["email": .string(u.email), "code": .string(code), "newPassword": "third password 789"])
        XCTAssertEqual(reuse.status, 422, "a code works once")

        let log = s.serverLog
        for secret in [u.email, code, "new password 456", "sıfırlamak"] {
            XCTAssertFalse(log.contains(secret), "the log leaks mail content")
        }
    }
}

/// A Resend-compatible sink on the project's own HTTP engine: records requests, answers
/// with scripted statuses.
final class ResendSink: HTTPResponder, @unchecked Sendable {
    struct Received {
        var path: String
        var headers: HTTPHeaders
        var body: JSONValue?
    }

    // Guarded by `lock`.
    private var statuses: [Int]
    private var log: [Received] = []
    private let lock = NSLock()

    init(statuses: [Int]) { self.statuses = statuses }

    var received: [Received] { lock.withLock { log } }

    func bodyLimit(for head: HTTPRequestHead) -> Int { 1 << 20 }

    func respond(to request: HTTPRequest, sink: HTTPResponseSink) {
        let status = lock.withLock {
            log.append(Received(path: request.path, headers: request.headers, body: try? JSONParser.parse(request.body)))
            return statuses.isEmpty ? 200 : statuses.removeFirst()
        }
        var response = HTTPResponse(status: status, body: Array(#"{"id":"sent"}"#.utf8))
        response.headers.add(name: "Content-Type", value: "application/json")
        sink.send(response)
    }
}

/// The Resend transport against a local sink.
final class ResendTransportTests: XCTestCase {
    func testPostsTheResendShapeAndClassifiesFailures() throws {
        let sink = ResendSink(statuses: [200, 503, 429, 422, 401])
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.loopCount = 1
        let server = HTTPServer(configuration: configuration, responder: sink, logger: Logger(minimumLevel: .error))
        let port = try server.start()
        defer { server.shutdown(gracePeriod: 1) }
        let transport = try XCTUnwrap(
            ResendTransport(
                baseURL: "http://127.0.0.1:\(port)/", apiKey: "re_test_key",
                from: "Suplash <no-reply@suplash.app>", timeoutSeconds: 5))
        let message = OutboxMessage(
            id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", recipient: "ayse@example.com",
            subject: "Suplash doğrulama kodunuz", text: "Kod: 123456", createdAt: 0)
        XCTAssertNoThrow(try transport.deliver(message))
        let first = try XCTUnwrap(sink.received.first)
        XCTAssertEqual(first.path, "/emails")
        XCTAssertEqual(first.headers.first(name: "Authorization"), "Bearer re_test_key")
        XCTAssertEqual(first.headers.first(name: "Idempotency-Key"), message.id)
        XCTAssertEqual(first.body?["from"]?.stringValue, "Suplash <no-reply@suplash.app>")
        XCTAssertEqual(first.body?["to"], .array(["ayse@example.com"]))
        XCTAssertEqual(first.body?["subject"]?.stringValue, "Suplash doğrulama kodunuz")
        XCTAssertEqual(first.body?["text"]?.stringValue, "Kod: 123456")

        func failure() -> MailDeliveryError? {
            do {
                try transport.deliver(message)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(failure(), .temporary(kind: "http_503"))
        XCTAssertEqual(failure(), .temporary(kind: "http_429"))
        XCTAssertEqual(failure(), .permanent(kind: "http_422"))
        XCTAssertEqual(failure(), .permanent(kind: "http_401"))
        XCTAssertEqual(
            Set(sink.received.map { $0.headers.first(name: "Idempotency-Key") ?? "" }), [message.id],
            "every attempt carries the same key")

        let closed = try XCTUnwrap(ResendTransport(baseURL: "http://127.0.0.1:9", apiKey: "k", from: "f", timeoutSeconds: 2))
        XCTAssertThrowsError(try closed.deliver(message)) {
            XCTAssertEqual($0 as? MailDeliveryError, .temporary(kind: "network"))
        }
        XCTAssertNil(ResendTransport(baseURL: "ftp://example.com", apiKey: "k", from: "f"))
    }

    func testTemplatesFollowTheProfileLocale() {
        let en = MailTemplates.message(purpose: .resetPassword, code: "042042", locale: "en-GB", validMinutes: 10)
        XCTAssertEqual(en.subject, "Your Suplash password reset code")
        XCTAssertEqual(MailFiles.sixDigits(en.text), ["042042"])
        let tr = MailTemplates.message(purpose: .verifyEmail, code: "042042", locale: "tr", validMinutes: 10)
        XCTAssertEqual(tr.subject, "Suplash doğrulama kodunuz")
        XCTAssertEqual(MailFiles.sixDigits(tr.text), ["042042"])
        XCTAssertEqual(
            MailTemplates.message(purpose: .verifyEmail, code: "1", locale: "de-DE", validMinutes: 10).subject,
            "Your Suplash verification code", "English is the default")
        XCTAssertEqual(
            MailTemplates.message(purpose: .verifyEmail, code: "1", locale: "TR-tr", validMinutes: 10).subject,
            "Suplash doğrulama kodunuz")
    }
}

/// The `.eml` file's `Date:` header, written without `DateFormatter`.
final class FileMailDateTests: XCTestCase {
    func testDateHeaderMatchesFoundationsFormatter() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        // Leap days, century rules (1900 not leap, 2000 leap), ends of years and days, before 1970.
        var instants: [Int64] = [
            0, -1, 999, -86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_399_000, 1_798_761_599_999,
            -2_203_891_200_000, 253_402_300_799_000,
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            instants.append(Int64(bitPattern: state >> 1) % 8_000_000_000_000 - 2_000_000_000_000)
        }
        for ms in instants {
            let seconds = (Double(ms) / 1000).rounded(.down)
            XCTAssertEqual(
                FileMailTransport.rfc5322Date(unixMilliseconds: ms),
                formatter.string(from: Date(timeIntervalSince1970: seconds)), "\(ms)")
        }
        let message = OutboxMessage(id: "m1", recipient: "a@example.com", subject: "s", text: "t", createdAt: 1_796_189_595_000)
        XCTAssertTrue(
            FileMailTransport.render(message, from: "f").contains("\r\nDate: Wed, 02 Dec 2026 05:33:15 +0000\r\n"))
    }
}
