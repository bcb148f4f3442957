/// Response bytes a connection has produced and the kernel has not taken yet, in order.
///
/// Heads (and small bodies) are appended to owned buffers; a large body is queued as the
/// responder's own array, without a copy (the array is shared, so many connections sending
/// the same document hold it once).
struct OutputQueue {
    enum Chunk {
        /// Bytes built by the engine (heads, small bodies), appendable while last.
        case owned([UInt8])
        /// A responder's body array, sent as is.
        case shared([UInt8])
        /// A file body, sent with `sendfile` (costs no memory here).
        case file(HTTPFileBody)
    }

    /// Bodies up to this size are copied next to their head (one buffer per send).
    static let copyLimit = 16 * 1024

    private(set) var chunks: [Chunk] = []
    /// Bytes of `chunks[0]` already written.
    private(set) var firstOffset = 0
    /// Unsent bytes held in memory.
    private(set) var memoryBytes = 0
    /// A drained owned buffer kept for reuse.
    private var spare: [UInt8] = []

    var isEmpty: Bool { chunks.isEmpty }

    /// Appends bytes to the last owned buffer (or a new one).
    mutating func appendOwned(_ build: (inout [UInt8]) -> Void) {
        let last = chunks.count - 1
        if last >= 0, case .owned(var buffer) = chunks[last] {
            chunks[last] = .owned([])
            let before = buffer.count
            build(&buffer)
            memoryBytes += buffer.count - before
            chunks[last] = .owned(buffer)
        } else {
            var buffer = spare
            spare = []
            build(&buffer)
            memoryBytes += buffer.count
            if !buffer.isEmpty { chunks.append(.owned(buffer)) }
        }
    }

    /// Queues `body` as its own chunk (no copy).
    mutating func appendShared(_ body: [UInt8]) {
        guard !body.isEmpty else { return }
        memoryBytes += body.count
        chunks.append(.shared(body))
    }

    /// Queues a file body (sent with `sendfile`).
    mutating func appendFile(_ file: HTTPFileBody) {
        guard file.count > 0 else { return }
        chunks.append(.file(file))
    }

    /// The file at the front and the offset to send from, when the front chunk is a file.
    var frontFile: (file: HTTPFileBody, offset: Int)? {
        if case .file(let file) = chunks.first { return (file, firstOffset) }
        return nil
    }

    /// Calls `body` with the unsent bytes of the first (memory) chunk and the whole second
    /// chunk when that is in memory too (else empty), for one `sendmsg` of up to two buffers.
    func withFront<R>(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> R) -> R {
        let empty: [UInt8] = []
        let first = chunks.first.map(Self.bytes) ?? empty
        let second = chunks.count > 1 ? Self.bytes(chunks[1]) : empty
        let offset = firstOffset
        return first.withUnsafeBytes { a in
            second.withUnsafeBytes { b in body(UnsafeRawBufferPointer(rebasing: a[offset...]), b) }
        }
    }

    private static func bytes(_ chunk: Chunk) -> [UInt8] {
        switch chunk {
        case .owned(let b), .shared(let b): b
        case .file: []
        }
    }

    private static func size(_ chunk: Chunk) -> Int {
        switch chunk {
        case .owned(let b), .shared(let b): b.count
        case .file(let file): file.count
        }
    }

    /// Drops `count` written bytes from the front.
    mutating func consume(_ count: Int) {
        var left = count
        while left > 0, !chunks.isEmpty {
            let size = Self.size(chunks[0]) - firstOffset
            let inMemory: Bool
            if case .file = chunks[0] { inMemory = false } else { inMemory = true }
            if left < size {
                firstOffset += left
                if inMemory { memoryBytes -= left }
                return
            }
            left -= size
            if inMemory { memoryBytes -= size }
            firstOffset = 0
            // The buffer is taken out before its chunk is dropped, so it is the only reference
            // and is emptied in place (binding the removed chunk instead kept a second
            // reference, and `removeAll(keepingCapacity:)` then allocated a fresh buffer).
            var buffer: [UInt8] = []
            if case .owned(let owned) = chunks[0] { buffer = owned }
            chunks.removeFirst()
            if buffer.capacity <= 256 * 1024, spare.capacity < buffer.capacity {
                buffer.removeAll(keepingCapacity: true)
                spare = buffer
            }
        }
    }
}

/// Appends the status line, headers and body of `response` to `output`.
///
/// The engine sets `Date`, `X-Request-ID`, `Content-Length` and `Connection`; responder
/// values for those are dropped (a `Content-Length` on a bodiless HEAD/304 answer is kept),
/// and so are fields whose name is not a token or whose value holds CR, LF or other controls.
func serializeResponse(
    _ response: HTTPResponse, requestID: String, isHead: Bool, closing: Bool,
    http10KeepAlive: Bool, dateLine: [UInt8], into output: inout OutputQueue
) {
    let status = (100...999).contains(response.status) ? response.status : 500
    let noBodyStatus = status < 200 || status == 204 || status == 304
    let file = response.bodyFile
    let bodyCount = file?.count ?? response.body.count
    let sendsBody = !isHead && !noBodyStatus && bodyCount > 0
    let copyBody = sendsBody && file == nil && response.body.count <= OutputQueue.copyLimit
    output.appendOwned { out in
        appendStatusLine(status, to: &out)
        var responderContentLength: String?
        for field in response.headers {
            switch headerRole(field.name) {
            case .engineOwned:
                continue
            case .contentLength:
                responderContentLength = field.value
                continue
            case .ordinary:
                guard isSafeFieldName(field.name), isSafeFieldValue(field.value) else { continue }
                out.append(contentsOf: field.name.utf8)
                out.append(0x3A)
                out.append(0x20)
                out.append(contentsOf: field.value.utf8)
                out.append(0x0D)
                out.append(0x0A)
            }
        }
        out.append(contentsOf: dateLine)
        appendLiteral("X-Request-ID: ", to: &out)
        out.append(contentsOf: requestID.utf8)
        out.append(0x0D)
        out.append(0x0A)
        if !(status < 200 || status == 204) {
            if (isHead || status == 304) && bodyCount == 0 {
                if let declared = responderContentLength, isDecimal(declared) {
                    appendLiteral("Content-Length: ", to: &out)
                    out.append(contentsOf: declared.utf8)
                    out.append(0x0D)
                    out.append(0x0A)
                } else if status != 304 {
                    appendLiteral("Content-Length: 0\r\n", to: &out)
                }
            } else {
                appendLiteral("Content-Length: ", to: &out)
                appendDecimal(bodyCount, to: &out)
                out.append(0x0D)
                out.append(0x0A)
            }
        }
        if closing {
            appendLiteral("Connection: close\r\n", to: &out)
        } else if http10KeepAlive {
            appendLiteral("Connection: keep-alive\r\n", to: &out)
        }
        out.append(0x0D)
        out.append(0x0A)
        if copyBody { out.append(contentsOf: response.body) }
    }
    if sendsBody && !copyBody {
        if let file { output.appendFile(file) } else { output.appendShared(response.body) }
    }
}

// MARK: - Serialization helpers

private enum HeaderRole {
    case ordinary, engineOwned, contentLength
}

@inline(__always)
private func headerRole(_ name: String) -> HeaderRole {
    switch name.utf8.count {
    case 4 where asciiCaseInsensitiveEquals(name, "date"): .engineOwned
    case 10 where asciiCaseInsensitiveEquals(name, "connection"): .engineOwned
    case 10 where asciiCaseInsensitiveEquals(name, "keep-alive"): .engineOwned
    case 12 where asciiCaseInsensitiveEquals(name, "x-request-id"): .engineOwned
    case 14 where asciiCaseInsensitiveEquals(name, "content-length"): .contentLength
    case 17 where asciiCaseInsensitiveEquals(name, "transfer-encoding"): .engineOwned
    default: .ordinary
    }
}

private func isSafeFieldName(_ name: String) -> Bool {
    guard !name.isEmpty else { return false }
    if let safe = name.utf8.withContiguousStorageIfAvailable({ bytes in bytes.allSatisfy(isTokenByte) }) {
        return safe
    }
    return name.utf8.allSatisfy(isTokenByte)
}

private func isSafeFieldValue(_ value: String) -> Bool {
    @inline(__always) func safe(_ b: UInt8) -> Bool { b >= 0x20 ? b != 0x7F : b == 0x09 }
    if let result = value.utf8.withContiguousStorageIfAvailable({ bytes in bytes.allSatisfy(safe) }) {
        return result
    }
    return value.utf8.allSatisfy(safe)
}

private func isDecimal(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.count <= 18 && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

@inline(__always)
private func appendLiteral(_ literal: StaticString, to out: inout [UInt8]) {
    out.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
}

private func appendDecimal(_ value: Int, to out: inout [UInt8]) {
    if value == 0 {
        out.append(0x30)
        return
    }
    var digits:
        (
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
        ) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    var n = value
    var count = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
        while n > 0 && count < 20 {
            buffer[19 - count] = UInt8(truncatingIfNeeded: 0x30 + n % 10)
            n /= 10
            count += 1
        }
        out.append(contentsOf: buffer[(20 - count)...])
    }
}

private func appendStatusLine(_ status: Int, to out: inout [UInt8]) {
    appendLiteral("HTTP/1.1 ", to: &out)
    appendDecimal(status, to: &out)
    out.append(0x20)
    out.append(contentsOf: reasonPhrase(status).utf8)
    out.append(0x0D)
    out.append(0x0A)
}
