// libFuzzer target for the incremental HTTP/1.1 request parser (Sources/SuplashHTTP/HTTPParser.swift).
//
// Not part of Package.swift: Fuzz/run.sh compiles this file together with HTTPParser.swift,
// HTTPHeaders.swift and HTTPTypes.swift into one module with `-sanitize=fuzzer,address`.
//
// Each input is fed to the parser several ways — the whole buffer at once, one byte per feed,
// pieces of pseudo-random sizes derived from the input's first bytes (sometimes leaving the
// unconsumed rest pending, as a connection does), and one split point — with the default limits
// and with small ones. Every feeding of the same input must give the same requests and bodies
// and, after them, the same outcome (error or not); and each step is checked against the
// parser's contract (see `check` calls below). A broken invariant aborts with a message.

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Invariant checks

@inline(never)
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        let text = "fuzz invariant broken: \(message())\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
        abort()
    }
}

// MARK: - What one feeding produced

/// A request as the parser delivered it (head fields that must not depend on how bytes were split).
struct Delivered: Equatable {
    var method: String
    var target: String
    var path: String
    var query: String?
    var version: HTTPVersion
    var headers: HTTPHeaders
    var framing: BodyFraming
    var keepAlive: Bool
    var http10KeepAlive: Bool
    var expectContinue: Bool
    var requestID: String?
    var isHead: Bool
    var body: [UInt8]
}

struct Outcome: Equatable {
    var requests: [Delivered] = []
    /// The error that ended parsing, if any.
    var error: HTTPEngineError?
    /// Bytes the parser consumed in total.
    var consumed = 0
}

/// A small deterministic generator (SplitMix64) seeded from the input.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}

/// How the bytes are cut into reads.
enum Feeding {
    case whole
    case bytewise
    /// Random piece sizes in 1...maxPiece; with `keepRest`, sometimes stop after an event and
    /// keep the unconsumed rest pending for the next read (as Connection does under backpressure).
    case random(seed: UInt64, maxPiece: Int, keepRest: Bool)
    case splitAt(Int)
}

// MARK: - Checks on one delivered head

func checkHead(_ p: ParsedHead, limits: HTTPParserLimits, bodyLimit: Int) {
    let h = p.head
    check(!h.method.isEmpty && h.method.utf8.allSatisfy(isTokenByte), "method not a token: \(h.method.debugDescription)")
    check(h.target.utf8.first == UInt8(ascii: "/"), "target not origin-form: \(h.target.debugDescription)")
    check(h.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }, "target has bad bytes")
    check(h.method.utf8.count + h.target.utf8.count + 10 <= limits.maxRequestLine, "request line longer than the limit")
    if let q = h.query {
        check(h.target == h.path + "?" + q, "path/query do not rebuild the target")
    } else {
        check(h.target == h.path && !h.target.utf8.contains(UInt8(ascii: "?")), "no query but target differs from path")
    }
    check(h.version.major == 1 && (0...9).contains(h.version.minor), "version \(h.version)")
    var section = 2
    for field in h.headers {
        section += field.name.utf8.count + 1 + receivedLength(field.value) + 2
        check(!field.name.isEmpty && field.name.utf8.allSatisfy(isTokenByte), "field name not a token")
        check(field.value.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }, "field value has a control byte")
        check(
            field.value.utf8.first != 0x20 && field.value.utf8.first != 0x09
                && field.value.utf8.last != 0x20 && field.value.utf8.last != 0x09, "field value not trimmed")
    }
    check(section <= limits.maxHeaderSection, "header section \(section) over the limit \(limits.maxHeaderSection)")
    let hosts = h.headers.values(name: "host")
    check(h.version.minor == 0 ? hosts.count <= 1 : hosts.count == 1, "Host count \(hosts.count) accepted for \(h.version)")
    for host in hosts {
        check(isHostShaped(host), "Host \(host.debugDescription) accepted but not uri-host [\":\" port]")
    }
    let hasTE = h.headers.contains(name: "transfer-encoding")
    let hasCL = h.headers.contains(name: "content-length")
    switch p.framing {
    case .chunked:
        check(hasTE && !hasCL && h.version.minor >= 1, "chunked framing without exactly TE on 1.1")
        check(
            h.headers.listValues(name: "transfer-encoding").last.map(asciiLowercased) == "chunked",
            "chunked framing whose final coding is not chunked")
        check(
            h.headers.listValues(name: "transfer-encoding").map(asciiLowercased) == ["chunked"],
            "chunked framing for TE \(h.headers.values(name: "transfer-encoding"))")
    case .length(let n):
        check(n > 0 && hasCL && !hasTE, "length framing \(n) without a lone Content-Length")
        for v in h.headers.values(name: "content-length") {
            for element in v.split(separator: ",") where !element.trimmingOWS().isEmpty {
                check(Int(element.trimmingOWS()) == n, "Content-Length element \(element) differs from framing \(n)")
            }
        }
    case .none:
        check(!hasTE, "no framing but Transfer-Encoding present")
    }
    let connection = h.headers.listValues(name: "connection").map(asciiLowercased)
    let expectedKeepAlive =
        h.version.minor >= 1
        ? !connection.contains("close")
        : connection.contains("keep-alive") && !connection.contains("close")
    check(p.keepAlive == expectedKeepAlive, "keepAlive \(p.keepAlive) for Connection \(connection)")
    check(p.http10KeepAlive == (h.version.minor == 0 && p.keepAlive), "http10KeepAlive")
    check(p.isHead == (h.method == "HEAD"), "isHead")
    if let id = p.incomingRequestID {
        check(
            id.utf8.count >= 1 && id.utf8.count <= 64 && h.headers.values(name: "x-request-id").contains(id),
            "request id \(id.debugDescription) not from a field")
    }
}

/// An independent, slower statement of RFC 9112 §3.2's Host rule (`uri-host [":" port]`,
/// RFC 3986 §3.2.2) for the invariant check.
func isHostShaped(_ value: String) -> Bool {
    let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    let subDelims = Set("!$&'()*+,;=".utf8)
    let hex = Set("0123456789ABCDEFabcdef".utf8)
    var bytes = Array(value.utf8)[...]
    if bytes.first == UInt8(ascii: "[") {
        guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > bytes.startIndex + 1 else { return false }
        guard bytes[(bytes.startIndex + 1)..<close].allSatisfy({ unreserved.contains($0) || subDelims.contains($0) || $0 == UInt8(ascii: ":") })
        else { return false }
        bytes = bytes[(close + 1)...]
    } else {
        let hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
        var i = bytes.startIndex
        while i < hostEnd {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < hostEnd, hex.contains(bytes[i + 1]), hex.contains(bytes[i + 2]) else { return false }
                i += 3
            } else {
                guard unreserved.contains(bytes[i]) || subDelims.contains(bytes[i]) else { return false }
                i += 1
            }
        }
        bytes = bytes[hostEnd...]
    }
    guard let first = bytes.first else { return true }
    return first == UInt8(ascii: ":") && bytes.dropFirst().allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

/// A lower bound of the bytes a parsed value took on the wire: invalid UTF-8 was decoded to
/// U+FFFD (3 bytes) from at least one byte.
func receivedLength(_ s: String) -> Int {
    s.unicodeScalars.reduce(0) { $0 + ($1 == "\u{FFFD}" ? 1 : UTF8.width($1)) }
}

/// ASCII-only lowercasing, as the parser compares tokens (no Unicode case mapping).
func asciiLowercased(_ s: Substring) -> String {
    String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
}

// MARK: - One feeding

func run(_ input: UnsafeRawBufferPointer, limits: HTTPParserLimits, bodyLimit: Int, feeding: Feeding) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = Outcome()
    var pending: [UInt8] = []
    /// Offset in `input` of pending[0] (for checking fixed bodies against the input).
    var pendingStart = 0
    var offset = 0
    var rng = SplitMix(state: 0)
    var keepRest = false
    var maxPiece = 1
    switch feeding {
    case .random(let seed, let m, let k):
        rng = SplitMix(state: seed)
        maxPiece = max(1, m)
        keepRest = k
    default:
        break
    }
    var current: ParsedHead?

    // An empty read changes nothing.
    let empty = parser.parse(UnsafeRawBufferPointer(start: nil, count: 0))
    check(empty.consumed == 0 && empty.event == nil, "empty read produced something")

    while offset < input.count {
        let piece: Int
        switch feeding {
        case .whole: piece = input.count
        case .bytewise: piece = 1
        case .random: piece = 1 + rng.below(maxPiece)
        case .splitAt(let at): piece = offset < at ? at - offset : input.count - offset
        }
        let end = min(input.count, offset + piece)
        if pending.isEmpty { pendingStart = offset }
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset..<end]))
        offset = end

        var position = 0
        readLoop: while position < pending.count || parser.state == .awaitingBody {
            let before = parser.state
            let (consumed, event) = pending.withUnsafeBytes { raw in
                parser.parse(UnsafeRawBufferPointer(rebasing: raw[position...]))
            }
            let available = pending.count - position
            check(consumed >= 0 && consumed <= available, "consumed \(consumed) of \(available)")
            let startOfStep = pendingStart + position
            position += consumed
            outcome.consumed += consumed
            guard let event else {
                check(consumed == available, "no event but only \(consumed) of \(available) consumed (state \(before))")
                check(parser.state != .failed && parser.state != .awaitingBody, "silent stop in \(parser.state)")
                break readLoop
            }
            switch event {
            case .head(let head):
                check(current == nil, "a head while a body was pending")
                checkHead(head, limits: limits, bodyLimit: bodyLimit)
                if head.framing == .none {
                    check(parser.isIdle, "not idle after a bodiless head")
                    outcome.requests.append(delivered(head, body: []))
                } else {
                    check(parser.state == .awaitingBody && !parser.isReadingBody, "head with body but state \(parser.state)")
                    // The parser waits for beginBody and consumes nothing meanwhile.
                    let again = pending.withUnsafeBytes { raw in
                        parser.parse(UnsafeRawBufferPointer(rebasing: raw[position...]))
                    }
                    check(again.consumed == 0 && again.event == nil, "parsed on before beginBody")
                    if let error = parser.beginBody(limit: bodyLimit) {
                        check(error == .contentTooLarge, "beginBody error \(error)")
                        if case .length(let n) = head.framing {
                            check(n > bodyLimit, "413 for \(n) ≤ \(bodyLimit)")
                        } else {
                            check(false, "beginBody failed for \(head.framing)")
                        }
                        check(parser.state == .failed, "not failed after beginBody error")
                        outcome.error = error
                        break readLoop
                    }
                    check(parser.isReadingBody, "not reading body after beginBody")
                    current = head
                }
            case .body(let body):
                guard let head = current else {
                    check(false, "a body without a head")
                    break readLoop
                }
                current = nil
                check(parser.isIdle, "not idle after a body")
                check(body.count <= bodyLimit, "body \(body.count) over the limit \(bodyLimit)")
                if case .length(let n) = head.framing {
                    check(body.count == n, "body \(body.count) bytes for Content-Length \(n)")
                    // The body is the last n bytes consumed in this step when it all arrived in it.
                    if consumed == n && before == .fixedBody(remaining: n) {
                        let slice = UnsafeRawBufferPointer(rebasing: input[startOfStep..<(startOfStep + n)])
                        check(body.elementsEqual(slice), "fixed body differs from the input bytes")
                    }
                } else {
                    check(head.framing == .chunked, "a body for framing \(head.framing)")
                }
                outcome.requests.append(delivered(head, body: body))
            case .error(let error):
                check(parser.state == .failed && !parser.isReadingBody, "error \(error) but state \(parser.state)")
                // A failed parser takes nothing more.
                let junk: [UInt8] = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                let after = junk.withUnsafeBytes { parser.parse($0) }
                check(after.consumed == 0 && after.event == nil, "failed parser consumed more input")
                outcome.error = error
                return outcome
            }
            // Like a connection under backpressure: sometimes keep the rest for later.
            if keepRest && rng.below(4) == 0 { break readLoop }
        }
        if parser.state == .failed { break }
        pending.removeFirst(position)
        pendingStart += position
    }
    // Anything left pending (kept back after an event) is parsed once no more bytes come.
    if parser.state != .failed && !pending.isEmpty {
        var position = 0
        while position < pending.count {
            let (consumed, event) = pending.withUnsafeBytes { raw in
                parser.parse(UnsafeRawBufferPointer(rebasing: raw[position...]))
            }
            position += consumed
            outcome.consumed += consumed
            guard let event else { break }
            switch event {
            case .head(let head):
                checkHead(head, limits: limits, bodyLimit: bodyLimit)
                if head.framing == .none {
                    outcome.requests.append(delivered(head, body: []))
                } else if let error = parser.beginBody(limit: bodyLimit) {
                    outcome.error = error
                    return outcome
                } else {
                    current = head
                }
            case .body(let body):
                if let head = current { outcome.requests.append(delivered(head, body: body)) }
                current = nil
            case .error(let error):
                outcome.error = error
                return outcome
            }
        }
    }
    return outcome
}

func delivered(_ p: ParsedHead, body: [UInt8]) -> Delivered {
    Delivered(
        method: p.head.method, target: p.head.target, path: p.head.path, query: p.head.query,
        version: p.head.version, headers: p.head.headers, framing: p.framing, keepAlive: p.keepAlive,
        http10KeepAlive: p.http10KeepAlive, expectContinue: p.expectContinue,
        requestID: p.incomingRequestID, isHead: p.isHead, body: body)
}

/// The errors a limit check can give: which one fires first may depend on where a line was cut
/// (a too-long line is rejected before its LF arrives, or as a whole with a bare LF).
func sameUpToSplitting(_ a: Outcome, _ b: Outcome) -> Bool {
    guard a.requests == b.requests, (a.error == nil) == (b.error == nil) else { return false }
    if a.error == nil { return a.consumed == b.consumed }
    return true
}

func describe(_ o: Outcome) -> String {
    "\(o.requests.count) requests \(o.requests.map { "\($0.method) \($0.target) \($0.framing) body=\($0.body.count)" }), error \(String(describing: o.error)), consumed \(o.consumed)"
}

// MARK: - Entry point

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    // Seed for the split positions from the first input bytes (FNV-1a of up to 8 bytes).
    var seed: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in input.prefix(8) { seed = (seed ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }

    let small = HTTPParserLimits(maxRequestLine: 48, maxHeaderSection: 160, maxChunkLine: 12)
    let configs: [(HTTPParserLimits, Int)] = [(HTTPParserLimits(), 1 << 20), (small, 24)]
    for (limits, bodyLimit) in configs {
        let whole = run(input, limits: limits, bodyLimit: bodyLimit, feeding: .whole)
        if whole.error == nil {
            check(whole.consumed == size, "no error but consumed \(whole.consumed) of \(size)")
        }
        let feedings: [Feeding] = [
            .bytewise,
            .random(seed: seed, maxPiece: 1 + Int(seed >> 59), keepRest: false),
            .random(seed: seed ^ 0x5555, maxPiece: 1 + Int((seed >> 8) & 63), keepRest: true),
            .splitAt(1 + Int(seed % UInt64(size))),
        ]
        for feeding in feedings {
            let other = run(input, limits: limits, bodyLimit: bodyLimit, feeding: feeding)
            check(
                sameUpToSplitting(whole, other),
                "feeding \(feeding) differs from the whole buffer:\n  whole: \(describe(whole))\n  split: \(describe(other))")
        }
    }
    return 0
}
