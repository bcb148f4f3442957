import CCurl
import Foundation

/// The client thread: owns the multi handle's transfers. Every method runs on that thread.
///
/// `@unchecked Sendable` only so that the `Thread` closure can carry it there: it is created
/// on the caller's thread, handed over before the thread starts, and touched by no other
/// thread afterwards (other threads talk to it through `SharedState.mailbox`).
final class CurlEngine: @unchecked Sendable {
    private let shared: SharedState
    private let configuration: HTTPClientConfiguration
    private var transfers: [UInt64: Transfer] = [:]

    init(shared: SharedState, configuration: HTTPClientConfiguration) {
        self.shared = shared
        self.configuration = configuration
    }

    /// The loop: take the mailbox, drive libcurl, complete finished transfers, sleep in
    /// `curl_multi_poll` until a socket, a libcurl timer or `curl_multi_wakeup` needs us.
    func run() {
        let multi = shared.multi.pointer
        while true {
            let (submissions, cancellations, deadline) = shared.mailbox.withLock { box in
                let taken = box.queued
                box.queued.removeAll()
                for submission in taken { box.inFlight.insert(submission.id) }
                let cancelled = box.cancellations
                box.cancellations.removeAll()
                return (taken, cancelled, box.shutdownDeadline)
            }
            for submission in submissions {
                if deadline != nil {
                    finish(submission.id, submission.completion, .failure(.shutDown))
                } else {
                    start(submission, multi: multi)
                }
            }
            for id in cancellations {
                guard let transfer = transfers.removeValue(forKey: id) else { continue }
                curl_multi_remove_handle(multi, transfer.easy)
                finish(id, transfer.completion, .failure(.cancelled))
            }
            if let deadline, transfers.isEmpty || ContinuousClock.now >= deadline { break }

            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = suplash_curl_msg_result(message)
                var privateData: UnsafeMutableRawPointer?
                _ = suplash_curl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &privateData)
                curl_multi_remove_handle(multi, easy)
                guard let privateData else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(privateData).takeUnretainedValue()
                transfers.removeValue(forKey: transfer.id)
                finish(transfer.id, transfer.completion, transfer.result(code: code))
            }

            var timeoutMs: Int32 = 1000
            if let deadline {
                let left = (deadline - ContinuousClock.now).curlMilliseconds
                timeoutMs = Int32(clamping: min(left, 1000))
            }
            // Sleep only when the mailbox is empty; from here on submitters wake us.
            let idle = shared.mailbox.withLock { box in
                guard box.queued.isEmpty, box.cancellations.isEmpty, box.shutdownDeadline == deadline else { return false }
                box.polling = true
                box.wakeSent = false
                return true
            }
            guard idle else { continue }
            _ = curl_multi_poll(multi, nil, 0, timeoutMs, nil)
            shared.mailbox.withLock { $0.polling = false }
        }

        // Shutting down: fail what is left, close every connection, release the handle.
        for (id, transfer) in transfers {
            curl_multi_remove_handle(multi, transfer.easy)
            finish(id, transfer.completion, .failure(.shutDown))
        }
        transfers.removeAll()
        let (late, waiters) = shared.mailbox.withLock { box in
            box.stopped = true
            let late = box.queued
            box.queued.removeAll()
            let waiters = box.stopWaiters
            box.stopWaiters.removeAll()
            return (late, waiters)
        }
        curl_multi_cleanup(multi)
        for submission in late { submission.completion(.failure(.shutDown)) }
        for waiter in waiters { waiter() }
    }

    private func finish(
        _ id: UInt64, _ completion: @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void,
        _ result: Result<HTTPClientResponse, HTTPClientError>
    ) {
        shared.mailbox.withLock { box in _ = box.inFlight.remove(id) }
        completion(result)
    }

    private func start(_ submission: Submission, multi: UnsafeMutableRawPointer) {
        let transfer: Transfer
        do {
            transfer = try Transfer(
                id: submission.id, request: submission.request, completion: submission.completion,
                configuration: configuration)
        } catch {
            finish(submission.id, submission.completion, .failure(error))
            return
        }
        guard curl_multi_add_handle(multi, transfer.easy) == CURLM_OK else {
            finish(submission.id, submission.completion, .failure(.invalidRequest))
            return
        }
        transfers[submission.id] = transfer
    }
}

/// One exchange: the easy handle, its header list, and the response as it arrives. Lives on
/// the client thread; libcurl's callbacks reach it through an unretained pointer while
/// `CurlEngine.transfers` keeps it alive.
final class Transfer {
    let id: UInt64
    let completion: @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    let easy: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let maxBody: Int
    private let requiresHTTP2: Bool
    var status = 0
    var headers: [HTTPClientHeader] = []
    var body: [UInt8] = []
    var bodyTooLarge = false

    init(
        id: UInt64, request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void,
        configuration: HTTPClientConfiguration
    ) throws(HTTPClientError) {
        self.id = id
        self.completion = completion
        maxBody = configuration.maxResponseBodyBytes
        requiresHTTP2 = configuration.requiresHTTP2
        try Transfer.validate(request, allowsCleartext: configuration.allowsCleartext)
        guard let easy = curl_easy_init() else { throw .curl(code: Int(CURLE_OUT_OF_MEMORY.rawValue)) }
        self.easy = easy

        var ok = true
        func set(_ option: CURLoption, _ value: Int) { ok = ok && suplash_curl_easy_setopt_long(easy, option, value) == CURLE_OK }
        func set(_ option: CURLoption, _ value: String) { ok = ok && suplash_curl_easy_setopt_string(easy, option, value) == CURLE_OK }

        set(CURLOPT_URL, request.url)
        set(CURLOPT_PROTOCOLS_STR, configuration.allowsCleartext ? "http,https" : "https")
        set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        set(CURLOPT_PIPEWAIT, 1)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_TCP_KEEPALIVE, 1)
        set(CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
        set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
        set(CURLOPT_TIMEOUT_MS, (request.timeout ?? configuration.requestTimeout).curlMilliseconds)
        if let caFile = configuration.caFile { set(CURLOPT_CAINFO, caFile) }
        // Refuse a server without ALPN h2 during the handshake, before the request is sent.
        if requiresHTTP2 { ok = ok && suplash_curl_require_h2_alpn(easy) == CURLE_OK }

        switch request.method {
        case "GET": set(CURLOPT_HTTPGET, 1)
        case "HEAD": set(CURLOPT_NOBODY, 1)
        default:
            if request.method != "POST" { set(CURLOPT_CUSTOMREQUEST, request.method) }
        }
        if request.method != "GET" && request.method != "HEAD" {
            // COPYPOSTFIELDS copies the bytes, so the request may be released.
            ok = ok && suplash_curl_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)) == CURLE_OK
            ok =
                ok
                && request.body.withUnsafeBytes { raw in
                    var empty: UInt8 = 0
                    return withUnsafeMutablePointer(to: &empty) { emptyPointer in
                        suplash_curl_easy_setopt_pointer(
                            easy, CURLOPT_COPYPOSTFIELDS,
                            UnsafeMutableRawPointer(mutating: raw.baseAddress) ?? UnsafeMutableRawPointer(emptyPointer))
                    }
                } == CURLE_OK
        }

        // Headers; an empty value needs curl's `Name;` spelling. `Expect:` and `Accept:` with
        // no value stop libcurl from adding its own.
        var lines = request.headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        let names = Set(request.headers.map { $0.name.lowercased() })
        if !names.contains("accept") { lines.append("Accept:") }
        lines.append("Expect:")
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                ok = false
                break
            }
            headerList = appended
        }
        ok = ok && suplash_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList) == CURLE_OK

        let me = Unmanaged.passUnretained(self).toOpaque()
        ok = ok && suplash_curl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me) == CURLE_OK
        ok = ok && suplash_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me) == CURLE_OK
        ok = ok && suplash_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me) == CURLE_OK
        ok = ok && suplash_curl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, transferWriteBody) == CURLE_OK
        ok = ok && suplash_curl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, transferWriteHeader) == CURLE_OK
        guard ok else { throw .invalidRequest }
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
    }

    /// Refuses what libcurl would send wrongly or not at all: a non-`https` (or, with
    /// `allowsCleartext`, non-`http(s)`) or non-absolute URL, a method that is not a token of
    /// letters, header fields with CR, LF or NUL or an empty or non-token name.
    static func validate(_ request: HTTPClientRequest, allowsCleartext: Bool = false) throws(HTTPClientError) {
        let url = request.url.utf8
        let lower = request.url.lowercased()
        let scheme = lower.hasPrefix("https://") ? 8 : (allowsCleartext && lower.hasPrefix("http://") ? 7 : 0)
        guard scheme > 0, url.count > scheme,
            !url.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { throw .invalidRequest }
        guard !request.method.isEmpty, request.method.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
            throw .invalidRequest
        }
        for header in request.headers {
            guard !header.name.isEmpty, header.name.utf8.allSatisfy(isTokenByte),
                !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
            else {
                throw .invalidRequest
            }
        }
    }

    /// RFC 9110 §5.6.2 `tchar`.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }

    /// The outcome once libcurl reports the transfer done with `code`.
    func result(code: CURLcode) -> Result<HTTPClientResponse, HTTPClientError> {
        if bodyTooLarge { return .failure(.responseTooLarge) }
        if code == CURLE_PEER_FAILED_VERIFICATION {
            var verifyResult = 0
            _ = suplash_curl_easy_getinfo_long(easy, CURLINFO_SSL_VERIFYRESULT, &verifyResult)
            if verifyResult == suplash_alpn_refusal_code() { return .failure(.http2NotNegotiated(.http1_1)) }
        }
        guard code == CURLE_OK else { return .failure(Transfer.error(for: code)) }
        var versionCode = 0
        _ = suplash_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &versionCode)
        let version = Transfer.version(versionCode)
        guard !requiresHTTP2 || version == .http2 || version == .http3 else {
            return .failure(.http2NotNegotiated(version))
        }
        var statusCode = 0
        _ = suplash_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &statusCode)
        return .success(HTTPClientResponse(status: statusCode, headers: headers, body: body, httpVersion: version))
    }

    static func version(_ code: Int) -> HTTPClientVersion {
        switch code {
        case CURL_HTTP_VERSION_1_0: return .http1_0
        case CURL_HTTP_VERSION_1_1: return .http1_1
        case CURL_HTTP_VERSION_2_0: return .http2
        case CURL_HTTP_VERSION_3: return .http3
        default: return .unknown
        }
    }

    /// The typed error for a libcurl failure code.
    static func error(for code: CURLcode) -> HTTPClientError {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_BAD_FUNCTION_ARGUMENT: return .invalidRequest
        case CURLE_COULDNT_RESOLVE_HOST: return .couldNotResolve
        case CURLE_COULDNT_CONNECT: return .couldNotConnect
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
            return .tls
        case CURLE_OPERATION_TIMEDOUT: return .timedOut
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING,
            CURLE_PARTIAL_FILE:
            return .connectionLost
        default: return .curl(code: Int(code.rawValue))
        }
    }
}

/// `CURLOPT_WRITEFUNCTION`: appends content; returning less than given aborts the transfer.
private func transferWriteBody(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
    _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard length > 0, let buffer else { return length }
    if transfer.body.count + length > transfer.maxBodyBytes {
        transfer.bodyTooLarge = true
        return 0
    }
    buffer.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
    }
    return length
}

/// `CURLOPT_HEADERFUNCTION`: one call per header line, status lines included. A status line
/// starts a new header block (so informational responses are forgotten). Parsed as bytes:
/// name up to the colon, value with surrounding spaces, tabs and the CRLF removed.
private func transferWriteHeader(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
    _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard length > 0, let buffer else { return length }
    buffer.withMemoryRebound(to: UInt8.self, capacity: length) { start in
        let line = UnsafeBufferPointer(start: start, count: length)
        if length >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {  // "HTTP/"
            transfer.headers.removeAll()
            return
        }
        guard let colon = line.firstIndex(of: 0x3A), colon > 0 else { return }
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        var first = colon + 1
        var last = length
        while first < last, isSpace(line[first]) { first += 1 }
        while last > first, isSpace(line[last - 1]) { last -= 1 }
        let name = String(decoding: UnsafeBufferPointer(rebasing: line[0..<colon]), as: UTF8.self)
        let value = String(decoding: UnsafeBufferPointer(rebasing: line[first..<last]), as: UTF8.self)
        transfer.headers.append(HTTPClientHeader(name, value))
    }
    return length
}

extension Transfer {
    var maxBodyBytes: Int { maxBody }
}
