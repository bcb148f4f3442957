import Foundation
import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON
import Synchronization
import XCTest

@testable import SuplashAPNs

/// The mock APNs server started by scripts/with-apns-mock (Tests/Mocks/apns_mock.py): its
/// ports, CA, provider key and request log.
struct APNsMock {
    let productionURL: String
    let sandboxURL: String
    let http1URL: String
    let caFile: String
    let keyFile: String
    let keyID: String
    let teamID: String
    let bundleID: String
    let requestLog: String

    /// The running mock, or a skip when SUPLASH_TEST_APNS_MOCK is not set.
    static func running() throws -> APNsMock {
        guard let dir = ProcessInfo.processInfo.environment["SUPLASH_TEST_APNS_MOCK"], !dir.isEmpty else {
            throw XCTSkip("SUPLASH_TEST_APNS_MOCK is not set (run under scripts/with-apns-mock)")
        }
        let info = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/mock.json"))))
        func port(_ name: String) throws -> Int64 { try XCTUnwrap(info[name]?.int64Value) }
        return APNsMock(
            productionURL: "https://127.0.0.1:\(try port("productionPort"))",
            sandboxURL: "https://localhost:\(try port("sandboxPort"))",
            http1URL: "https://127.0.0.1:\(try port("http1Port"))",
            caFile: try XCTUnwrap(info["caFile"]?.stringValue), keyFile: try XCTUnwrap(info["keyFile"]?.stringValue),
            keyID: try XCTUnwrap(info["keyID"]?.stringValue ?? info["keyId"]?.stringValue),
            teamID: try XCTUnwrap(info["teamId"]?.stringValue),
            bundleID: try XCTUnwrap(info["bundleIds"]?.arrayValue?.first?.stringValue),
            requestLog: try XCTUnwrap(info["requestLog"]?.stringValue))
    }

    func providerKey() throws -> ES256PrivateKey {
        try ES256PrivateKey(pem: Array(try Data(contentsOf: URL(fileURLWithPath: keyFile))))
    }

    /// How many records of `event` the mock has written.
    func count(event: String) throws -> Int {
        try String(contentsOfFile: requestLog, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains("\"event\":\"\(event)\"") }.count
    }

    /// The mock's request records for these push ids, in the order it answered them
    /// (`event` = `request`; `held` marks a stream the mock keeps open).
    func records(for pushIDs: [UUID], event: String = "request") throws -> [JSONValue] {
        let wanted = Set(pushIDs.map { $0.uuidString.lowercased() })
        let text = try String(contentsOfFile: requestLog, encoding: .utf8)
        return try text.split(separator: "\n").compactMap { line in
            let record = try JSONParser.parse(Array(line.utf8))
            guard record["event"]?.stringValue == event, let id = record["apnsId"]?.stringValue, wanted.contains(id) else {
                return nil
            }
            return record
        }
    }
}

/// Records the backoff delays the sender asked to sleep (and returns at once).
final class SleepRecorder: Sendable {
    private let delays = Mutex<[Duration]>([])
    var recorded: [Duration] { delays.withLock { $0 } }
    func sleep(_ duration: Duration) async { delays.withLock { $0.append(duration) } }
}

/// Integration tests against the mock APNs server; skipped unless SUPLASH_TEST_APNS_MOCK is set.
final class APNsMockIntegrationTests: XCTestCase {
    var mock: APNsMock!
    var client: HTTPClient!

    override func setUp() async throws {
        mock = try APNsMock.running()
        client = try HTTPClient(configuration: HTTPClientConfiguration(caFile: mock.caFile, maxConcurrentStreams: 500))
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    /// A device token of 64 hex digits starting with `prefix` (the mock scripts by prefix).
    func token(_ prefix: String) -> String {
        let random = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        return String((prefix + random).prefix(64))
    }

    func push(
        _ prefix: String, type: APNsPushType = .background, environment: APNsEnvironment = .production,
        bundleID: String? = nil, payload: String? = nil, registeredAt: Int64? = nil
    ) -> APNsPush {
        let body = payload ?? (type == .background ? #"{"aps":{"content-available":1},"position":"42"}"# : #"{"aps":{"content-changed":true}}"#)
        return APNsPush(
            id: UUID(), deviceToken: token(prefix), pushType: type, bundleID: bundleID ?? mock.bundleID,
            environment: environment, payload: Array(body.utf8), expiration: 0, collapseID: "sync",
            tokenRegisteredAt: registeredAt)
    }

    func sender(
        key: ES256PrivateKey? = nil, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        sleeper: SleepRecorder = SleepRecorder(), maxConcurrent: Int = 100
    ) throws -> (APNsSender, APNsProviderToken) {
        let token = APNsProviderToken(key: try key ?? mock.providerKey(), keyID: mock.keyID, teamID: mock.teamID, now: now)
        let configuration = APNsSenderConfiguration(
            productionURL: mock.productionURL, sandboxURL: mock.sandboxURL,
            maxConcurrentPushes: maxConcurrent, maxAttempts: 3)
        return (
            APNsSender(
                client: client, providerToken: token, configuration: configuration,
                sleep: { await sleeper.sleep($0) }, random: { 1.0 }), token
        )
    }

    // MARK: HTTP/2 client

    func testHTTP2IsNegotiatedAndTheJWTIsAccepted() async throws {
        let token = APNsProviderToken(key: try mock.providerKey(), keyID: mock.keyID, teamID: mock.teamID)
        let p = push("aa")
        let request = try APNsRequestBuilder.request(for: p, origin: mock.productionURL, providerToken: try token.current())
        let response = try await client.send(request)
        XCTAssertEqual(response.httpVersion, .http2)
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        XCTAssertEqual(response.header("apns-id"), p.id.uuidString.lowercased())
        let records = try mock.records(for: [p.id])
        XCTAssertEqual(records.count, 1)
        XCTAssertEqual(records.first?["pushType"]?.stringValue, "background")
        XCTAssertEqual(records.first?["priority"]?.stringValue, "5")
        XCTAssertEqual(records.first?["topic"]?.stringValue, mock.bundleID)
        XCTAssertEqual(records.first?["collapseId"]?.stringValue, "sync")
    }

    func testServerWithoutHTTP2IsRefusedBeforeTheRequestIsSent() async throws {
        let before = try mock.count(event: "http1-request")
        do throws(HTTPClientError) {
            _ = try await client.send(HTTPClientRequest(method: "POST", url: mock.http1URL + "/3/device/00", body: Array("{}".utf8)))
            XCTFail("answered over HTTP/1.1 and was accepted")
        } catch {
            XCTAssertEqual(error, .http2NotNegotiated(.http1_1))
        }
        XCTAssertEqual(try mock.count(event: "http1-request"), before, "refused in the TLS handshake: nothing was sent")
    }

    func testUntrustedServerCertificateFailsTLS() async throws {
        let systemTrust = try HTTPClient()
        do throws(HTTPClientError) {
            _ = try await systemTrust.send(HTTPClientRequest(method: "GET", url: mock.productionURL + "/"))
            XCTFail("trusted the mock's self-signed CA without being told")
        } catch {
            XCTAssertEqual(error, .tls)
        }
        await systemTrust.shutdown()
    }

    /// Requests held by the mock (a barrier that is never reached) while the client is cancelled or shut down.
    func heldRequest() throws -> (HTTPClientRequest, UUID) {
        let token = APNsProviderToken(key: try mock.providerKey(), keyID: mock.keyID, teamID: mock.teamID)
        let p = push("0ba11ff")
        return (try APNsRequestBuilder.request(for: p, origin: mock.productionURL, providerToken: try token.current()), p.id)
    }

    func testCancellingAnInFlightRequestFailsItWithCancelled() async throws {
        let (request, id) = try heldRequest()
        let client = self.client!
        let task = Task { () -> HTTPClientError? in
            do throws(HTTPClientError) {
                _ = try await client.send(request)
                return nil
            } catch {
                return error
            }
        }
        // Cancel once the mock holds the stream open.
        while try mock.records(for: [id], event: "held").isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        let error = await task.value
        XCTAssertEqual(error, .cancelled)
        // The client still works afterwards.
        let again = try await client.send(
            try APNsRequestBuilder.request(
                for: push("aa"), origin: mock.productionURL,
                providerToken: request.headers[0].value.replacingOccurrences(of: "bearer ", with: "")))
        XCTAssertEqual(again.status, 200)
    }

    func testShutdownFailsRequestsStillInFlight() async throws {
        let (request, id) = try heldRequest()
        let started = expectation(description: "held")
        let failed = expectation(description: "failed with shutDown")
        client.send(request) { result in
            if case .failure(.shutDown) = result { failed.fulfill() }
        }
        client.send(request) { _ in started.fulfill() }  // completes too, with the same error
        while try mock.records(for: [id], event: "held").count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        await client.shutdown(gracePeriod: .milliseconds(50))
        await fulfillment(of: [started, failed], timeout: 30)
    }

    // MARK: Provider token and concurrency

    func testProviderTokenIsReusedAcrossRequests() async throws {
        let (sender, token) = try sender()
        let pushes = (0..<20).map { _ in push("aa") }
        let results = await sender.send(pushes)
        XCTAssertEqual(results.map(\.outcome), Array(repeating: .sent(environment: .production), count: 20))
        let records = try mock.records(for: pushes.map(\.id))
        XCTAssertEqual(records.count, 20)
        XCTAssertEqual(Set(records.compactMap { $0["iat"]?.int64Value }), [try XCTUnwrap(token.issuedAt)], "one token for all")
    }

    func testManyConcurrentStreamsShareOneConnection() async throws {
        // Tokens 0ba1132…: the mock holds each answer until 0x32 = 50 such streams are open at once.
        let (sender, _) = try sender(maxConcurrent: 200)
        let pushes = (0..<200).map { _ in push("0ba1132") }
        let results = await sender.send(pushes)
        XCTAssertEqual(results.map(\.outcome), Array(repeating: .sent(environment: .production), count: 200))
        XCTAssertEqual(results.map(\.pushID), pushes.map(\.id), "results in push order")
        XCTAssertEqual(results.map(\.attempts), Array(repeating: 1, count: 200), "no stream waited for a retry")
        let records = try mock.records(for: pushes.map(\.id))
        XCTAssertEqual(records.count, 200)
        XCTAssertEqual(Set(records.compactMap { $0["connection"]?.int64Value }).count, 1, "one connection")
        XCTAssertEqual(Set(records.compactMap { $0["heldTogether"]?.int64Value }), [50], "50 streams in flight together")
    }

    // MARK: Error paths

    func testBadDeviceTokenTriesTheOtherEnvironmentOnceThenDropsTheToken() async throws {
        let (sender, _) = try sender()
        let wrongEnvironment = push("0bad5a")
        let dead = push("0bad00")
        let results = await sender.send([wrongEnvironment, dead])
        XCTAssertEqual(results[0].outcome, .sent(environment: .sandbox))
        XCTAssertEqual(results[0].attempts, 2)
        XCTAssertEqual(results[1].outcome, .tokenInvalid(.badDeviceToken))
        XCTAssertEqual(results[1].attempts, 2)
        XCTAssertEqual(try mock.records(for: [dead.id]).compactMap { $0["environment"]?.stringValue }, ["production", "sandbox"])
        XCTAssertNil(sender.pausedReason, "a dead token is not a configuration error")
    }

    func testUnregisteredDropsTheTokenUnlessItWasRegisteredAgainLater() async throws {
        let (sender, _) = try sender()
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let results = await sender.send([push("0410", registeredAt: nowMs - 86_400_000), push("0410", registeredAt: nowMs + 86_400_000)])
        XCTAssertEqual(results.map(\.outcome), [.tokenInvalid(.unregistered), .rejected(.unregistered)])
        XCTAssertEqual(results.map(\.attempts), [1, 1])
    }

    func testTooManyRequestsAndServerErrorsBackOffThenSucceedOrAreDeferred() async throws {
        let sleeper = SleepRecorder()
        let (sender, _) = try sender(sleeper: sleeper)
        let results = await sender.send([push("1429"), push("1500"), push("0429"), push("0503")])
        XCTAssertEqual(results[0].outcome, .sent(environment: .production))
        XCTAssertEqual(results[0].attempts, 2)
        XCTAssertEqual(results[1].outcome, .sent(environment: .production))
        XCTAssertEqual(results[1].attempts, 2)
        XCTAssertEqual(results[2].outcome, .retryLater(.tooManyRequests, after: .seconds(4)))
        XCTAssertEqual(results[2].attempts, 3)
        XCTAssertEqual(results[3].outcome, .retryLater(.serviceUnavailable, after: .seconds(4)))
        // Exponential: 1 s then 2 s before the 2nd and 3rd attempts (jitter pinned to its top).
        XCTAssertEqual(sleeper.recorded.sorted(), [.seconds(1), .seconds(1), .seconds(1), .seconds(1), .seconds(2), .seconds(2)])
        XCTAssertEqual(sender.counters.sent, 2)
        XCTAssertEqual(sender.counters.failedByReason, ["TooManyRequests": 1, "ServiceUnavailable": 1])
    }

    func testConnectionResetIsRetriedOnANewConnection() async throws {
        let sleeper = SleepRecorder()
        let (sender, _) = try sender(sleeper: sleeper)
        let p = push("0e5e7")
        let results = await sender.send([p])
        XCTAssertEqual(results.first?.outcome, .sent(environment: .production))
        XCTAssertEqual(results.first?.attempts, 2)
        let records = try mock.records(for: [p.id])
        XCTAssertEqual(records.compactMap { $0["status"]?.int64Value }, [0, 200])
        let connections = records.compactMap { $0["connection"]?.int64Value }
        XCTAssertEqual(connections.count, 2)
        XCTAssertNotEqual(connections.first, connections.last, "reconnected")
        XCTAssertEqual(sleeper.recorded, [.seconds(1)], "one backoff before reconnecting")
    }

    func testInvalidProviderTokenPausesTheSenderAndSendsNothingMore() async throws {
        let otherKey = try ES256PrivateKey(pem: testProviderKeyPEM)
        let (sender, _) = try sender(key: otherKey)
        let first = await sender.send([push("aa")])
        XCTAssertEqual(first.first?.outcome, .paused(.invalidProviderToken))
        XCTAssertEqual(sender.pausedReason, .invalidProviderToken)
        let later = (0..<3).map { _ in push("aa") }
        let results = await sender.send(later)
        XCTAssertEqual(results.map(\.outcome), Array(repeating: .paused(.invalidProviderToken), count: 3))
        XCTAssertEqual(results.map(\.attempts), [0, 0, 0])
        XCTAssertEqual(try mock.records(for: later.map(\.id)).count, 0, "nothing sent while paused")
        sender.resume()
        XCTAssertNil(sender.pausedReason)
    }

    func testExpiredProviderTokenIsRefreshedAndThePushRetried() async throws {
        // The first token is signed 70 minutes in the past; then the clock is right.
        let realNow = Int64(Date().timeIntervalSince1970)
        let calls = Mutex(0)
        let clock: @Sendable () -> Int64 = {
            calls.withLock { count in
                count += 1
                return count == 1 ? realNow - 70 * 60 : realNow
            }
        }
        let (sender, token) = try sender(now: clock)
        let p = push("aa")
        let results = await sender.send([p])
        XCTAssertEqual(results.first?.outcome, .sent(environment: .production))
        XCTAssertEqual(results.first?.attempts, 2)
        let records = try mock.records(for: [p.id])
        XCTAssertEqual(records.compactMap { $0["reason"]?.stringValue }, ["ExpiredProviderToken"])
        XCTAssertEqual(records.compactMap { $0["iat"]?.int64Value }, [realNow - 70 * 60, realNow])
        XCTAssertEqual(token.issuedAt, realNow)
    }

    func testExpiredProviderTokenYoungerThanTwentyMinutesPausesInsteadOfRefreshing() async throws {
        // Our clock is 70 minutes slow: every token we make is "expired" to the mock, and it was
        // made just now, so a refresh would break the 20-minute rule.
        let slow = Int64(Date().timeIntervalSince1970) - 70 * 60
        let (sender, _) = try sender(now: { slow })
        let results = await sender.send([push("aa")])
        XCTAssertEqual(results.first?.outcome, .paused(.expiredProviderToken))
        XCTAssertEqual(results.first?.attempts, 1)
    }

    func testTopicErrorsPauseTheSender() async throws {
        let (sender, _) = try sender()
        let results = await sender.send([push("aa", type: .widgets, bundleID: "org.example.NotOurs")])
        XCTAssertEqual(results.first?.outcome, .paused(.topicDisallowed))
        XCTAssertEqual(sender.pausedReason, .topicDisallowed)
    }

    func testEveryPushTypeIsAcceptedWithItsTopicAndPriority() async throws {
        let (sender, _) = try sender()
        let pushes = [
            push("aa", type: .alert, payload: #"{"aps":{"alert":{"title":"t"}}}"#), push("aa", type: .background),
            push("aa", type: .complication, payload: #"{"aps":{}}"#), push("aa", type: .widgets),
        ]
        let results = await sender.send(pushes)
        XCTAssertEqual(results.map(\.outcome), Array(repeating: .sent(environment: .production), count: 4))
        let records = try mock.records(for: pushes.map(\.id))
        XCTAssertEqual(
            Set(records.compactMap { $0["topic"]?.stringValue }),
            [mock.bundleID, mock.bundleID + ".complication", mock.bundleID + ".push-type.widgets"])
    }

    func testPayloadRefusedByTheServerIsRejectedNotRetried() async throws {
        let (sender, _) = try sender()
        let results = await sender.send([push("aa", type: .background, payload: #"{"aps":{}}"#)])
        XCTAssertEqual(results.first?.outcome, .rejected(.payloadEmpty))
        XCTAssertEqual(results.first?.attempts, 1)
        XCTAssertNil(sender.pausedReason)
    }
}
