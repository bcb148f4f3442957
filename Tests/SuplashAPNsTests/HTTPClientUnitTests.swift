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
