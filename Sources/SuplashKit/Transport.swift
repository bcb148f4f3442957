import CZlib
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request to the server (path relative to the server URL).
struct APIRequest: Sendable {
    var method: String
    var path: String
    var query: [(String, String)] = []
    var body: Data?
    var headers: [(String, String)] = []
    /// Compress the body with gzip (`Content-Encoding: gzip`).
    var gzip = false
    var timeout: TimeInterval?
}

/// A server answer.
struct APIResponse: Sendable {
    var status: Int
    var body: Data
    var headers: [String: String]

    var json: [String: Any]? { JSONRead.object(body) }

    /// The problem's stable `code` (RFC 9457 body), if any.
    var problemCode: String? { JSONRead.string(json?["code"]) }

    var problem: SuplashError {
        .server(status: status, code: problemCode ?? "http_\(status)", detail: JSONRead.string(json?["detail"]) ?? "")
    }
}

/// URLSession with an ephemeral configuration (no cache, cookies or credentials on disk)
/// and the client's retry rules: exponential backoff with jitter, `Retry-After` on 429
/// and 503, `idempotency_key_in_use` retried; other 4xx are returned to the caller.
final class Transport: Sendable {
    let baseURL: URL
    let session: URLSession
    let retry: RetryPolicy
    let timeout: TimeInterval

    init(baseURL: URL, retry: RetryPolicy, timeout: TimeInterval) {
        self.baseURL = baseURL
        self.retry = retry
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    func url(for request: APIRequest) throws -> URL {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard var components = URLComponents(string: base + request.path) else {
            throw SuplashError.invalidArgument("bad path \(request.path)")
        }
        if !request.query.isEmpty {
            // Percent-encode everything outside the unreserved set (tokens are base64url, but be safe).
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            components.percentEncodedQuery = request.query.map { name, value in
                name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
            }.joined(separator: "&")
        }
        guard let url = components.url else { throw SuplashError.invalidArgument("bad path \(request.path)") }
        return url
    }

    /// Sends `request`, retrying transient failures; returns any HTTP answer that is not
    /// retried (2xx, and 4xx/5xx the caller decides about).
    func send(_ request: APIRequest) async throws -> APIResponse {
        var urlRequest = URLRequest(url: try url(for: request))
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = request.timeout ?? timeout
        urlRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if var body = request.body {
            urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if request.gzip {
                body = try Gzip.compress(body)
                urlRequest.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
            }
            urlRequest.httpBody = body
        }
        var attempt = 0
        while true {
            attempt += 1
            let response: APIResponse
            do {
                let (data, raw) = try await session.data(for: urlRequest)
                guard let http = raw as? HTTPURLResponse else { throw SuplashError.invalidResponse("not HTTP") }
                var headers: [String: String] = [:]
                for (key, value) in http.allHeaderFields {
                    if let k = key as? String, let v = value as? String { headers[k.lowercased()] = v }
                }
                response = APIResponse(status: http.statusCode, body: data, headers: headers)
            } catch let error as SuplashError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard attempt < retry.maxAttempts else { throw SuplashError.offline(String(describing: error)) }
                try await Task.sleep(nanoseconds: UInt64(retry.delay(afterAttempt: attempt, retryAfter: nil) * 1e9))
                continue
            }
            let retryable =
                response.status == 429 || response.status == 503 || response.status == 502
                || response.status == 504 || (response.status == 409 && response.problemCode == "idempotency_key_in_use")
            guard retryable, attempt < retry.maxAttempts else { return response }
            let retryAfter = response.headers["retry-after"].flatMap { TimeInterval($0) }
            try await Task.sleep(nanoseconds: UInt64(retry.delay(afterAttempt: attempt, retryAfter: retryAfter) * 1e9))
        }
    }
}

/// gzip (RFC 1952) through zlib, which every platform ships (`libz` on Apple's SDKs).
enum Gzip {
    static func compress(_ input: Data) throws -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        guard
            deflateInit2_(
                &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            throw SuplashError.invalidArgument("gzip: deflateInit2 failed")
        }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        let capacity = output.count
        let rc: Int32 = input.withUnsafeBytes { (inRaw: UnsafeRawBufferPointer) -> Int32 in
            output.withUnsafeMutableBytes { (outRaw: UnsafeMutableRawBufferPointer) -> Int32 in
                stream.next_in = UnsafeMutablePointer(mutating: inRaw.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(inRaw.count)
                stream.next_out = outRaw.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(capacity)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END else { throw SuplashError.invalidArgument("gzip: deflate failed (\(rc))") }
        output.count = Int(stream.total_out)
        return output
    }
}
