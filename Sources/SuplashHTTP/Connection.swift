import CEpoll

/// One request's place in a connection's response order.
struct ResponseSlot {
    let sequence: UInt64
    let requestID: String
    let isHead: Bool
    /// The request asked for (or the engine decided on) closing after this response.
    let closeAfter: Bool
    /// An HTTP/1.0 request that asked for keep-alive (the answer says `Connection: keep-alive`).
    let http10KeepAlive: Bool
    /// The sink while the responder has not answered.
    var sink: HTTPResponseSink?
    var response: HTTPResponse?
    /// A ready interim answer (`100 Continue`), written as is.
    var interim: [UInt8]?
}

/// One accepted TCP connection: an explicit state machine driven by its loop.
///
/// ```
/// readingHead ──head──▶ readingBody ──body──▶ (dispatch) ──▶ readingHead …
///      │                    │                      │
///      │ pipeline full      │                      └─ Connection: close / HTTP/1.0 ─▶ awaitingResponses(closeAfter: true)
///      └────────────▶ awaitingResponses(closeAfter: false) ──drained──▶ readingHead
/// any framing error / timeout ─▶ awaitingResponses(closeAfter: true) ─flushed─▶ lingering ─EOF/deadline─▶ closed
/// EOF (client half-close) ─▶ awaitingResponses(closeAfter: true), input ended ─answered+flushed─▶ closed
///                         └─ an in-flight sink has onClose (parked long poll) ─▶ closed at once
/// ```
/// Writing is orthogonal: responses go to `outbound` in request order, are written at
/// once, and what the kernel does not take waits with EPOLLOUT armed.
///
/// Confined to its loop's thread. Owns its descriptor and closes it exactly once.
final class Connection {
    enum State: Equatable {
        /// Waiting for or parsing a request head (also: keep-alive idle).
        case readingHead
        /// Reading a request body.
        case readingBody
        /// Not reading: `closeAfter == false` is back-pressure (too many in flight);
        /// `true` means no further request will be read — close once answered.
        case awaitingResponses(closeAfter: Bool)
        /// Write side shut down; discarding input until EOF, `deadline` or the byte cap.
        case lingering(deadline: UInt64)
        case closed
    }

    private enum TimerPurpose {
        case none, idle, header, body, writeStall, linger
    }

    let loop: EventLoop
    let serial: UInt64
    let remoteAddress: String
    private var socket: SocketHandle
    private let fd: Int32
    private(set) var state: State = .readingHead
    private var parser: HTTPRequestParser

    private var inbound: [UInt8] = []
    private var inboundStart = 0
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private var pending: [ResponseSlot] = []
    private var nextSequence: UInt64 = 0
    private var currentHead: ParsedHead?
    private var currentRequestID = ""
    private var interest: UInt32 = CEPOLL_IN
    private var isProcessing = false
    /// Input bytes read and thrown away after the last request we will answer.
    private var discarded = 0
    /// The client finished sending (read returned EOF): nothing more is read, the requests
    /// already received are still answered (RFC 9112 §9.6), then the connection closes.
    private var inputEnded = false

    private var headDeadline: UInt64 = 0
    private var idleDeadline: UInt64 = 0
    private var bodyDeadline: UInt64 = 0
    private var writeDeadline: UInt64 = 0
    private var scheduledDeadline: UInt64 = 0

    private let headerTimeout: UInt64
    private let idleTimeout: UInt64
    private let lingerTimeout: UInt64
    private let lingerMaxBytes: Int
    private let maxPipelined: Int

    /// Unsent response bytes past which no further request is read: a client that
    /// pipelines requests but does not read the answers must not grow `outbound` without
    /// bound (design notes: "stop reading from it until it drains").
    static let maxOutboundBacklog = 256 * 1024

    /// True when another request may be read: few enough answers outstanding and unsent.
    private var mayReadMore: Bool {
        pending.count < maxPipelined && outbound.count - outboundStart <= Connection.maxOutboundBacklog
    }

    init(loop: EventLoop, fd: Int32, serial: UInt64, remoteAddress: String) {
        self.loop = loop
        self.fd = fd
        self.socket = SocketHandle(fd)
        self.serial = serial
        self.remoteAddress = remoteAddress
        let configuration = loop.context.configuration
        parser = HTTPRequestParser(limits: configuration.parserLimits)
        headerTimeout = nanoseconds(configuration.headerReadTimeout)
        idleTimeout = nanoseconds(configuration.keepAliveIdleTimeout)
        lingerTimeout = nanoseconds(configuration.lingerTimeout)
        lingerMaxBytes = configuration.lingerMaxBytes
        maxPipelined = max(1, configuration.maxPipelined)
    }

    /// Starts the header-read timer (from accept).
    func start() {
        headDeadline = loop.now &+ headerTimeout
        updateTimer()
    }

    /// Closes the descriptor of a connection that was never registered with the loop.
    func abandonUnregistered() {
        state = .closed
        socket.close()
    }

    // MARK: - Events

    func handleEvent(_ events: UInt32) {
        if events & (CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR) != 0 {
            if inputEnded {
                // EPOLLIN is no longer requested; a hang-up or error means the client is
                // gone for good (e.g. a reset after it closed fully): stop answering.
                if events & (CEPOLL_HUP | CEPOLL_ERR) != 0 { close() }
                if state != .closed { afterIO() }
                return
            }
            switch state {
            case .readingHead, .readingBody:
                readAndProcess()
            case .lingering, .awaitingResponses(closeAfter: true):
                // No further request will be read: discard input, notice EOF.
                discardInput()
            case .awaitingResponses(closeAfter: false):
                // Back-pressure, not reading: only a hang-up or error is reported here.
                if events & (CEPOLL_HUP | CEPOLL_ERR) != 0 { close() }
            case .closed:
                return
            }
        }
        if state != .closed { afterIO() }
    }

    private func readAndProcess() {
        let buffer = loop.readBuffer
        guard let base = buffer.baseAddress else { return }
        let result: IOResult
        do {
            result = try Sys.read(fd, base, buffer.count)
        } catch {
            close()
            return
        }
        switch result {
        case .wouldBlock:
            return
        case .done(0):
            handleEndOfInput()
        case .done(let n):
            if state == .readingBody { bodyDeadline = loop.now &+ idleTimeout }
            ingest(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// The peer finished sending (EOF: a half-close with `shutdown(SHUT_WR)`, or a full
    /// close — the two look the same here). Per RFC 9112 §9.6 the requests already
    /// received are still answered, in order, and the connection then closes; nothing
    /// more is read or parsed. A partial request (head or body not complete) is
    /// discarded without an answer: it was never dispatched, so nothing was committed.
    ///
    /// Exception: if any in-flight request's sink has an `onClose` handler (a parked long
    /// poll), the connection closes now and those handlers run — a long poll must not keep
    /// a probably dead connection open. A handler registered later (the responder parks
    /// after EOF was seen) has the same effect, via `parkedAfterEndOfInput()`.
    ///
    /// If the client closed fully, writing the answers fails (`EPIPE`/`ECONNRESET`, with
    /// `MSG_NOSIGNAL`) or a reset is reported by epoll; either closes the connection.
    private func handleEndOfInput() {
        inputEnded = true
        currentHead = nil
        inbound = []
        inboundStart = 0
        var parked = false
        for slot in pending {
            if let sink = slot.sink, sink.peerFinishedSending() { parked = true }
        }
        if parked {
            close()
            return
        }
        state = .awaitingResponses(closeAfter: true)
    }

    /// A responder registered `onClose` on a sink after the client half-closed: the request
    /// is parked, so the connection closes now (running the handlers) instead of waiting —
    /// unless it was answered meanwhile.
    func parkedAfterEndOfInput(sequence: UInt64) {
        guard inputEnded, state != .closed,
              pending.contains(where: { $0.sequence == sequence && $0.sink != nil }) else { return }
        close()
    }

    private func ingest(_ bytes: UnsafeRawBufferPointer) {
        if inboundStart >= inbound.count {
            // Fast path: nothing buffered, parse straight from the loop's read buffer.
            inbound.removeAll(keepingCapacity: true)
            inboundStart = 0
            let used = processInput(bytes)
            if used < bytes.count, state == .awaitingResponses(closeAfter: false) {
                inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...]))
            }
        } else {
            inbound.append(contentsOf: bytes)
            processBuffered()
        }
    }

    private func processBuffered() {
        guard inboundStart < inbound.count, isReadingState else { return }
        let start = inboundStart
        let used: Int = {
            let buffer = self.inbound
            return buffer.withUnsafeBytes { self.processInput(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        }()
        inboundStart += used
        if state == .awaitingResponses(closeAfter: true) || inboundStart >= inbound.count {
            inbound.removeAll(keepingCapacity: inbound.capacity <= 256 * 1024)
            inboundStart = 0
        } else if inboundStart > 64 * 1024 {
            inbound.removeFirst(inboundStart)
            inboundStart = 0
        }
    }

    private var isReadingState: Bool {
        state == .readingHead || state == .readingBody
    }

    /// Runs the parser over `bytes` while the state allows reading.
    /// - Returns: how many bytes were consumed.
    private func processInput(_ bytes: UnsafeRawBufferPointer) -> Int {
        let wasProcessing = isProcessing
        isProcessing = true
        defer { isProcessing = wasProcessing }
        var offset = 0
        while isReadingState {
            let (consumed, event) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            guard let event else { break }
            switch event {
            case .head(let head):
                handleHead(head)
            case .body(let body):
                if let head = currentHead {
                    currentHead = nil
                    dispatch(head, requestID: currentRequestID, body: body)
                }
            case .error(let error):
                let requestID = currentHead != nil ? currentRequestID : (parser.requestIDSoFar ?? loop.makeRequestID())
                currentHead = nil
                queueError(error, requestID: requestID)
            }
        }
        if state == .readingHead && !parser.isIdle && headDeadline == 0 {
            headDeadline = loop.now &+ headerTimeout
        }
        return offset
    }

    private func handleHead(_ head: ParsedHead) {
        headDeadline = 0
        let requestID = head.incomingRequestID ?? loop.makeRequestID()
        if loop.isDraining {
            queueError(.shuttingDown, requestID: requestID)
            return
        }
        if head.framing == .none {
            dispatch(head, requestID: requestID, body: [])
            return
        }
        let limit = loop.context.responder.bodyLimit(for: head.head)
        if let error = parser.beginBody(limit: limit) {
            queueError(error, requestID: requestID)
            return
        }
        currentHead = head
        currentRequestID = requestID
        state = .readingBody
        bodyDeadline = loop.now &+ idleTimeout
        if head.expectContinue && head.head.version.minor >= 1 {
            queueInterim(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
    }

    private func dispatch(_ head: ParsedHead, requestID: String, body: [UInt8]) {
        let sequence = nextSequence
        nextSequence &+= 1
        let sink = HTTPResponseSink(eventLoop: loop, connection: self, sequence: sequence)
        pending.append(ResponseSlot(sequence: sequence, requestID: requestID, isHead: head.isHead,
                                    closeAfter: !head.keepAlive, http10KeepAlive: head.http10KeepAlive,
                                    sink: sink, response: nil, interim: nil))
        if !head.keepAlive {
            state = .awaitingResponses(closeAfter: true)
        } else if !mayReadMore {
            state = .awaitingResponses(closeAfter: false)
        } else {
            state = .readingHead
        }
        let request = HTTPRequest(head: head.head, body: body, requestID: requestID, remoteAddress: remoteAddress)
        loop.context.responder.respond(to: request, sink: sink)
    }

    /// Queues an engine error answer after everything in flight; no further reading.
    private func queueError(_ error: HTTPEngineError, requestID: String) {
        loop.context.logger.debug("http.request_rejected", .status(error.status), .requestID(requestID))
        let response = loop.context.configuration.errorResponse(error, requestID)
        let sequence = nextSequence
        nextSequence &+= 1
        pending.append(ResponseSlot(sequence: sequence, requestID: requestID, isHead: false, closeAfter: true,
                                    http10KeepAlive: false, sink: nil, response: response, interim: nil))
        state = .awaitingResponses(closeAfter: true)
        writeReadySlots()
    }

    private func queueInterim(_ bytes: [UInt8]) {
        let sequence = nextSequence
        nextSequence &+= 1
        pending.append(ResponseSlot(sequence: sequence, requestID: "", isHead: false, closeAfter: false,
                                    http10KeepAlive: false, sink: nil, response: nil, interim: bytes))
        writeReadySlots()
    }

    // MARK: - Responses

    /// A responder's answer arrives (on the loop thread).
    func deliver(sequence: UInt64, response: HTTPResponse) {
        guard state != .closed else { return }
        guard let index = pending.firstIndex(where: { $0.sequence == sequence }) else { return }
        pending[index].response = response
        pending[index].sink = nil
        writeReadySlots()
        if !isProcessing { afterIO() }
    }

    /// Moves every answer at the head of the order into `outbound`.
    private func writeReadySlots() {
        while let first = pending.first {
            if let interim = first.interim {
                pending.removeFirst()
                outbound.append(contentsOf: interim)
                continue
            }
            guard let response = first.response else { break }
            pending.removeFirst()
            var closing = first.closeAfter || responseAsksToClose(response)
            if !closing && pending.isEmpty {
                if state == .awaitingResponses(closeAfter: true) { closing = true }
                if loop.isDraining && parser.isIdle { closing = true }
            }
            serialize(response, slot: first, closing: closing)
            if closing {
                state = .awaitingResponses(closeAfter: true)
                abandonPending()
                break
            }
        }
        if pending.isEmpty { idleDeadline = loop.now &+ idleTimeout }
        if state == .awaitingResponses(closeAfter: false) && mayReadMore {
            state = parser.isReadingBody ? .readingBody : .readingHead
        }
    }

    private func abandonPending() {
        guard !pending.isEmpty else { return }
        let abandoned = pending
        pending = []
        for slot in abandoned { slot.sink?.connectionClosed() }
    }

    private func responseAsksToClose(_ response: HTTPResponse) -> Bool {
        for field in response.headers where asciiCaseInsensitiveEquals(field.name, "connection") {
            for element in field.value.split(separator: ",") where asciiCaseInsensitiveEquals(String(element.trimmingOWS()), "close") {
                return true
            }
        }
        return false
    }

    /// Appends the status line, headers and body of `response` to `outbound`.
    private func serialize(_ response: HTTPResponse, slot: ResponseSlot, closing: Bool) {
        let status = (100...999).contains(response.status) ? response.status : 500
        appendStatusLine(status, to: &outbound)
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
                outbound.append(contentsOf: field.name.utf8)
                outbound.append(0x3A)
                outbound.append(0x20)
                outbound.append(contentsOf: field.value.utf8)
                outbound.append(0x0D)
                outbound.append(0x0A)
            }
        }
        outbound.append(contentsOf: loop.dateLine())
        appendLiteral("X-Request-ID: ", to: &outbound)
        outbound.append(contentsOf: slot.requestID.utf8)
        outbound.append(0x0D)
        outbound.append(0x0A)
        let noBodyStatus = status < 200 || status == 204 || status == 304
        if !(status < 200 || status == 204) {
            if (slot.isHead || status == 304) && response.body.isEmpty {
                if let declared = responderContentLength, isDecimal(declared) {
                    appendLiteral("Content-Length: ", to: &outbound)
                    outbound.append(contentsOf: declared.utf8)
                    outbound.append(0x0D)
                    outbound.append(0x0A)
                } else if status != 304 {
                    appendLiteral("Content-Length: 0\r\n", to: &outbound)
                }
            } else {
                appendLiteral("Content-Length: ", to: &outbound)
                appendDecimal(response.body.count, to: &outbound)
                outbound.append(0x0D)
                outbound.append(0x0A)
            }
        }
        if closing {
            appendLiteral("Connection: close\r\n", to: &outbound)
        } else if slot.http10KeepAlive {
            appendLiteral("Connection: keep-alive\r\n", to: &outbound)
        }
        outbound.append(0x0D)
        outbound.append(0x0A)
        if !slot.isHead && !noBodyStatus {
            outbound.append(contentsOf: response.body)
        }
    }

    // MARK: - Writing, interest, timers

    /// Flushes, closes or lingers as the state requires, resumes reading after
    /// back-pressure, then updates the epoll interest and the timer.
    private func afterIO() {
        var rounds = 0
        while state != .closed && rounds < 16 {
            rounds += 1
            guard flush() else { return }
            switch state {
            case .awaitingResponses(closeAfter: true):
                if pending.isEmpty && outboundStart >= outbound.count {
                    // After the client's EOF there is nothing left to linger for.
                    if inputEnded { close() } else { startLingering() }
                }
            case .awaitingResponses(closeAfter: false):
                // Back-pressure ends once the answers are out (or few enough are left).
                if mayReadMore {
                    state = parser.isReadingBody ? .readingBody : .readingHead
                    continue
                }
            case .readingHead, .readingBody:
                if inboundStart < inbound.count {
                    processBuffered()
                    continue
                }
                if loop.isDraining && pending.isEmpty && outboundStart >= outbound.count && parser.isIdle {
                    close()
                    return
                }
            default:
                break
            }
            break
        }
        guard state != .closed else { return }
        updateInterest()
        updateTimer()
    }

    /// Writes as much of `outbound` as the kernel takes.
    /// - Returns: false when the connection was closed because of a write error.
    private func flush() -> Bool {
        while outboundStart < outbound.count {
            var result = IOResult.wouldBlock
            var failed = false
            let start = outboundStart
            outbound.withUnsafeBytes { buffer in
                do {
                    result = try Sys.send(fd, UnsafeRawBufferPointer(rebasing: buffer[start...]))
                } catch {
                    failed = true
                }
            }
            if failed {
                close()
                return false
            }
            switch result {
            case .done(let n) where n > 0:
                outboundStart += n
                writeDeadline = loop.now &+ idleTimeout
            default:
                // A new backlog (EPOLLOUT not armed yet) starts its write-stall clock now.
                if interest & CEPOLL_OUT == 0 { writeDeadline = loop.now &+ idleTimeout }
                return true
            }
        }
        if !outbound.isEmpty {
            outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
            outboundStart = 0
        }
        return true
    }

    private func updateInterest() {
        var desired: UInt32 = 0
        switch state {
        case .readingHead, .readingBody, .lingering, .awaitingResponses(closeAfter: true):
            desired = CEPOLL_IN
        case .awaitingResponses(closeAfter: false), .closed:
            desired = 0
        }
        // EOF stays readable (level-triggered): once seen, stop asking for EPOLLIN.
        if inputEnded { desired = 0 }
        if outboundStart < outbound.count { desired |= CEPOLL_OUT }
        guard desired != interest else { return }
        do {
            try loop.setInterest(fd: fd, events: desired)
            interest = desired
        } catch {
            loop.context.logger.warning("http.epoll_mod_failed", .number("errno", Int(error.errno)))
            close()
        }
    }

    private func currentDeadline() -> (UInt64, TimerPurpose) {
        switch state {
        case .closed:
            return (0, .none)
        case .lingering(let deadline):
            return (deadline, .linger)
        case .readingHead, .readingBody, .awaitingResponses:
            break
        }
        if outboundStart < outbound.count { return (writeDeadline, .writeStall) }
        switch state {
        case .readingHead:
            if headDeadline != 0 { return (headDeadline, .header) }
            if pending.isEmpty { return (idleDeadline, .idle) }
            return (0, .none)
        case .readingBody:
            return (bodyDeadline, .body)
        default:
            return (0, .none)
        }
    }

    private func updateTimer() {
        let (deadline, _) = currentDeadline()
        if deadline != 0 && (scheduledDeadline == 0 || deadline < scheduledDeadline) {
            scheduledDeadline = deadline
            loop.scheduleConnectionTimer(fd: fd, serial: serial, deadline: deadline)
        }
    }

    /// A heap entry for this connection came due.
    func timerFired(deadline: UInt64) {
        guard state != .closed, deadline == scheduledDeadline else { return }
        scheduledDeadline = 0
        let (due, purpose) = currentDeadline()
        guard due != 0 else { return }
        if due > loop.now {
            updateTimer()
            return
        }
        switch purpose {
        case .none:
            return
        case .idle, .writeStall, .linger:
            close()
        case .header, .body:
            let requestID = currentHead != nil ? currentRequestID : loop.makeRequestID()
            currentHead = nil
            queueError(.requestTimeout, requestID: requestID)
            afterIO()
        }
    }

    // MARK: - Closing

    private func startLingering() {
        _ = cepoll_shutdown_write(fd)
        state = .lingering(deadline: loop.now &+ lingerTimeout)
        loop.connectionStartedLingering()
        inbound = []
        inboundStart = 0
    }

    /// Reads and throws away input (after the last answered request, and while
    /// lingering); an error or more than `lingerMaxBytes` closes the connection, and so
    /// does EOF while lingering. EOF before that is a half-close: `handleEndOfInput()`.
    private func discardInput() {
        let buffer = loop.readBuffer
        guard let base = buffer.baseAddress else { return }
        for _ in 0..<8 {
            do {
                switch try Sys.read(fd, base, buffer.count) {
                case .wouldBlock:
                    return
                case .done(let n):
                    if n == 0 {
                        if case .lingering = state {
                            close()
                        } else {
                            // Still answering (e.g. an HTTP/1.0 request, then a half-close).
                            handleEndOfInput()
                        }
                        return
                    }
                    discarded += n
                    if discarded > lingerMaxBytes {
                        close()
                        return
                    }
                }
            } catch {
                close()
                return
            }
        }
    }

    /// Server shutdown: an idle connection closes now; a busy one after its answers.
    func drain() {
        if state == .readingHead && pending.isEmpty && parser.isIdle && outboundStart >= outbound.count {
            close()
        }
    }

    /// Closes the descriptor (once) and tells pending sinks the client is gone.
    func close() {
        guard state != .closed else { return }
        let wasLingering: Bool
        if case .lingering = state { wasLingering = true } else { wasLingering = false }
        state = .closed
        socket.close()
        loop.connectionDidClose(self, fd: fd, wasLingering: wasLingering)
        currentHead = nil
        abandonPending()
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
    for b in name.utf8 where !isTokenByte(b) { return false }
    return true
}

private func isSafeFieldValue(_ value: String) -> Bool {
    for b in value.utf8 where (b < 0x20 && b != 0x09) || b == 0x7F { return false }
    return true
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
    var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                 UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
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

/// RFC 9110 §15 reason phrases.
func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 206: "Partial Content"
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 304: "Not Modified"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 406: "Not Acceptable"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 410: "Gone"
    case 411: "Length Required"
    case 412: "Precondition Failed"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 417: "Expectation Failed"
    case 422: "Unprocessable Content"
    case 428: "Precondition Required"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    case 505: "HTTP Version Not Supported"
    default: "Unknown"
    }
}
