import Foundation
import SuplashHTTPClient
import XCTest

/// The outbound client without a server: refusals before sending, connection failures, shutdown.
final class HTTPClientUnitTests: XCTestCase {
    func testRequestsRefusedBeforeSending() async throws {
        let client = try HTTPClient()
        for request in [
            HTTPClientRequest(method: "GET", url: "http://127.0.0.1:1/"),  // not TLS
            HTTPClientRequest(method: "GET", url: "ftp://127.0.0.1/"),
            HTTPClientRequest(method: "GET", url: "https://127.0.0.1/a b"),  // space
            HTTPClientRequest(method: "G T", url: "https://127.0.0.1/"),
            HTTPClientRequest(method: "GET", url: "https://127.0.0.1/", headers: [HTTPClientHeader("x", "a\r\nb: c")]),
            HTTPClientRequest(method: "GET", url: "https://127.0.0.1/", headers: [HTTPClientHeader("bad name", "v")]),
        ] {
            do throws(HTTPClientError) {
                _ = try await client.send(request)
                XCTFail("sent \(request.method) \(request.url)")
            } catch {
                XCTAssertEqual(error, .invalidRequest)
            }
        }
        await client.shutdown()
    }

    func testBlockingExchangeTakesCleartextOnlyWhenAllowed() {
        let strict = HTTPClientConfiguration(connectTimeout: .seconds(5), requestTimeout: .seconds(5))
        let plain = HTTPClientConfiguration(
            connectTimeout: .seconds(5), requestTimeout: .seconds(5), requiresHTTP2: false, allowsCleartext: true)
        let cleartext = HTTPClientRequest(method: "GET", url: "http://127.0.0.1:1/")
        // The HTTP/2 default refuses `http` before connecting; with cleartext allowed the same
        // request is sent and fails at the connection (nothing listens on port 1).
        guard case .failure(let refused) = BlockingExchange.perform(cleartext, configuration: strict) else {
            return XCTFail("sent over cleartext")
        }
        XCTAssertEqual(refused, .invalidRequest)
        guard case .failure(let failed) = BlockingExchange.perform(cleartext, configuration: plain) else {
            return XCTFail("port 1 answered")
        }
        XCTAssertEqual(failed, .couldNotConnect)
        // Cleartext needs HTTP/1.1: with HTTP/2 required it stays refused.
        let both = HTTPClientConfiguration(requiresHTTP2: true, allowsCleartext: true)
        XCTAssertFalse(both.allowsCleartext)
        guard case .failure(let still) = BlockingExchange.perform(HTTPClientRequest(method: "FTP", url: "ftp://x/"), configuration: plain)
        else { return XCTFail("ftp sent") }
        XCTAssertEqual(still, .invalidRequest)
    }

    func testClosedPortIsCouldNotConnect() async throws {
        let client = try HTTPClient()
        // Port 1 on loopback: nothing listens there in the test environment.
        do throws(HTTPClientError) {
            _ = try await client.send(HTTPClientRequest(method: "GET", url: "https://127.0.0.1:1/"))
            XCTFail("connected to port 1")
        } catch {
            XCTAssertEqual(error, .couldNotConnect)
            XCTAssertTrue(error.isTransient)
        }
        await client.shutdown()
    }

    func testAfterShutdownRequestsFailWithShutDown() async throws {
        let client = try HTTPClient()
        await client.shutdown()
        await client.shutdown()  // twice is fine
        do throws(HTTPClientError) {
            _ = try await client.send(HTTPClientRequest(method: "GET", url: "https://127.0.0.1:1/"))
            XCTFail("sent after shutdown")
        } catch {
            XCTAssertEqual(error, .shutDown)
        }
        let callback = expectation(description: "callback")
        client.send(HTTPClientRequest(method: "GET", url: "https://127.0.0.1:1/")) { result in
            if case .failure(.shutDown) = result { callback.fulfill() }
        }
        await fulfillment(of: [callback], timeout: 30)
    }

    func testCancelledTaskFailsWithCancelled() async throws {
        let client = try HTTPClient()
        let task = Task { () -> HTTPClientError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(HTTPClientError) {
                _ = try await client.send(HTTPClientRequest(method: "GET", url: "https://127.0.0.1:1/"))
                return nil
            } catch {
                return error
            }
        }
        let error = await task.value
        XCTAssertEqual(error, .cancelled)
        await client.shutdown()
    }
}
