import Foundation
import SuplashJSON

/// The mock APNs server that `scripts/with-apns-mock` starts (Tests/Mocks/apns_mock.py) and
/// announces through `SUPLASH_TEST_APNS_MOCK` (its directory, holding `mock.json`): what the
/// push and reminder end-to-end tests need to point a server at it.
struct MockAPNs {
    /// `mock.json` as the mock wrote it (ports, CA, key, bundle ids, request log, …).
    let info: JSONValue
    /// The file the mock appends one JSON line per request to.
    let requestLog: String
    /// The first bundle id the mock accepts as a topic.
    let bundleID: String
    /// The server environment for `apns.*`: the mock's provider key, production on
    /// `127.0.0.1` and sandbox on `localhost` (two hosts, so each environment has its own
    /// connection), its CA, its bundle id, and a 50 ms poll.
    let environment: [String: String]

    /// The running mock, or nil when the tests run without `scripts/with-apns-mock` (or its
    /// `mock.json` lacks a field).
    static func running() -> MockAPNs? {
        guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"], !dir.isEmpty,
            let data = FileManager.default.contents(atPath: dir + "/mock.json"), let info = try? JSONParser.parse(Array(data)),
            let production = info["productionPort"]?.int64Value, let sandbox = info["sandboxPort"]?.int64Value,
            let ca = info["caFile"]?.stringValue, let key = info["keyFile"]?.stringValue,
            let keyID = info["keyID"]?.stringValue ?? info["keyId"]?.stringValue, let team = info["teamId"]?.stringValue,
            let bundle = info["bundleIds"]?.arrayValue?.first?.stringValue, let log = info["requestLog"]?.stringValue
        else { return nil }
        return MockAPNs(
            info: info, requestLog: log, bundleID: bundle,
            environment: [
                "SUPLASH_APNS_KEY_FILE": key, "SUPLASH_APNS_KEY_ID": keyID, "SUPLASH_APNS_TEAM_ID": team,
                "SUPLASH_APNS_PRODUCTION_URL": "https://127.0.0.1:\(production)",
                "SUPLASH_APNS_SANDBOX_URL": "https://localhost:\(sandbox)", "SUPLASH_APNS_CA_FILE": ca,
                "SUPLASH_APNS_BUNDLE_IDS": bundle, "SUPLASH_APNS_POLL_INTERVAL_MS": "50",
            ])
    }
}
