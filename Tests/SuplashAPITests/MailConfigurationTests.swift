import Foundation
import XCTest

/// The `mail.*` and `apple.*` keys follow the environment naming rule and secrets are redacted.
final class MailConfigurationTests: XCTestCase {
    func testMailAndAppleKeysMapToTheirEnvironmentNames() throws {
        let (status, out, err) = try TestServer.runCLI(
            ["config"],
            environment: [
                "SUPLASH_MAIL_TRANSPORT": "resend",
                "SUPLASH_MAIL_RESEND_URL": "http://127.0.0.1:9999",
                "SUPLASH_MAIL_RESEND_API_KEY": "re_secret_value",
                "SUPLASH_MAIL_FROM": "Test <t@example.test>",
                "SUPLASH_APPLE_JWKS_URL": "/tmp/jwks.json",
                "SUPLASH_APPLE_AUDIENCES": "app.one,app.two",
            ])
        XCTAssertEqual(status, 0, err)
        for expected in [
            #""transport":"resend""#, #""resendURL":"http://127.0.0.1:9999""#, #""resendApiKey":"(set)""#,
            #""from":"Test <t@example.test>""#, #""jwksURL":"/tmp/jwks.json""#, #""audiences":"app.one,app.two""#,
        ] {
            XCTAssertTrue(out.contains(expected), "\(expected) missing in \(out)")
        }
        XCTAssertFalse(out.contains("re_secret_value"), "the API key is redacted")
        let (_, defaults, _) = try TestServer.runCLI(["config", "defaults"])
        XCTAssertTrue(defaults.contains(#""mail":{"transport":"file","resendURL":"https://api.resend.com""#), defaults)
        XCTAssertTrue(defaults.contains(#""jwksURL":"https://appleid.apple.com/auth/keys""#), defaults)
    }

    func testResendWithoutAKeyRefusesToStart() throws {
        let (status, _, err) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", TestServer.makeDataDir()],
            environment: ["SUPLASH_MAIL_TRANSPORT": "resend"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(err.contains("mail.resendApiKey"), err)
        let (bad, _, err2) = try TestServer.runCLI(
            ["serve", "--port", "0", "--data-dir", TestServer.makeDataDir()],
            environment: ["SUPLASH_MAIL_TRANSPORT": "smtp"])
        XCTAssertNotEqual(bad, 0)
        XCTAssertTrue(err2.contains("mail.transport"), err2)
    }
}
