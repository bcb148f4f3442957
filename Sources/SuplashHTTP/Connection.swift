import CEpoll
import SuplashLogging

/// The event loop's side of a `ConnectionStateMachine`.
struct LoopEnvironment: ConnectionEnvironment {
    let loop: EventLoop

    var now: UInt64 { loop.now }
    func dateLine() -> [UInt8] { loop.dateLine() }
    func makeRequestID() -> String { loop.makeRequestID() }
    func bodyLimit(for head: HTTPRequestHead) -> Int { loop.context.responder.bodyLimit(for: head) }
}

/// One accepted TCP connection: executes what its `ConnectionStateMachine` decides —
/// reads, sends, epoll interest, timers, the responder hand-off, closing. Every decision
/// lives in the state machine; this class only performs system calls and talks to sinks.
///
/// Confined to its loop's thread. Owns its descriptor and closes it exactly once.
final class Connection {
    let loop: EventLoop
    let serial: UInt64
    let remoteAddress: String
    private var socket: SocketHandle
    private let fd: Int32
    private var machine: ConnectionStateMachine
    private let environment: LoopEnvironment
    /// Sinks of requests handed to the responder and not answered yet.
    private var sinks: [HTTPResponseSink] = []
    /// Access lines of answered requests held until every earlier request is answered, so
    /// one connection's lines come in the order of its responses (pipelining), by sequence.
    private var heldLines: [(sequence: UInt64, record: LogRecord)] = []
    /// Actions waiting to run (events raised while actions run append here).
    private var queue: [ConnectionAction] = []
    private var running = false
    /// A `write` action is pending; it runs once the queue is otherwise empty.
    private var needsFlush = false
    private var interest: UInt32 = CEPOLL_IN
    private var wantsRead = true
    private var lingering = false
    private(set) var isClosed = false

    init(loop: EventLoop, fd: Int32, serial: UInt64, remoteAddress: String) {
        self.loop = loop
        self.fd = fd
        self.socket = SocketHandle(fd)
        self.serial = serial
        self.remoteAddress = remoteAddress
        environment = LoopEnvironment(loop: loop)
        machine = ConnectionStateMachine(configuration: loop.context.machineConfiguration, remoteAddress: remoteAddress)
    }

    /// Starts the header-read timer (from accept).
    func start() {
        perform(machine.start(environment))
    }

    /// Closes the descriptor of a connection that was never registered with the loop.
    func abandonUnregistered() {
        isClosed = true
        socket.close()
    }

    // MARK: - Events

    func handleEvent(_ events: UInt32) {
        guard !isClosed else { return }
        if events & (CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR) != 0 {
            if !wantsRead {
                // Not reading (back-pressure, or input ended): only a hang-up or error is
                // reported here, and it means the client is gone for good.
                if events & (CEPOLL_HUP | CEPOLL_ERR) != 0 { perform(machine.closeRequested()) }
            } else {
                readInput()
            }
        }
        if !isClosed && events & CEPOLL_OUT != 0 {
            perform(machine.socketWritable(environment))
        }
    }

    private func readInput() {
        let buffer = loop.readBuffer
        guard let base = buffer.baseAddress else { return }
        // Input that is only discarded is drained harder (up to 8 reads per wake-up).
        let rounds = machine.isDiscardingInput ? 8 : 1
        for _ in 0..<rounds {
            guard !isClosed, wantsRead else { return }
            let result: IOResult
            do {
                result = try Sys.read(fd, base, buffer.count)
            } catch {
                perform(machine.closeRequested())
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                perform(machine.peerHalfClosed(environment))
                return
            case .done(let n):
                perform(machine.bytesRead(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), environment))
            }
        }
    }

    /// A responder's answer arrives (on the loop thread).
    /// `record`, the request's access line, is emitted on this loop once the requests before
    /// it on this connection are answered (at once when there are none).
    func deliver(sequence: UInt64, response: HTTPResponse, log record: LogRecord? = nil) {
        guard !isClosed else {
            record?.emit()
            return
        }
        if let index = sinks.firstIndex(where: { $0.sequence == sequence }) { sinks.remove(at: index) }
        if let record {
            if heldLines.isEmpty && sinks.allSatisfy({ $0.sequence > sequence }) {
                record.emit()
            } else {
                let at = heldLines.firstIndex { $0.sequence > sequence } ?? heldLines.endIndex
                heldLines.insert((sequence, record), at: at)
                emitAnsweredLines()
            }
        }
        perform(machine.responseReady(sequence: sequence, response: response, environment))
    }

    /// Emits the held access lines that no unanswered earlier request precedes.
    private func emitAnsweredLines() {
        guard !heldLines.isEmpty else { return }
        let oldestOpen = sinks.lazy.map(\.sequence).min() ?? .max
        var released = 0
        while released < heldLines.count && heldLines[released].sequence < oldestOpen {
            heldLines[released].record.emit()
            released += 1
        }
        heldLines.removeFirst(released)
    }

    /// A responder registered `onClose` on a sink after the client half-closed: the
    /// request is parked, so it is abandoned now (running the handlers) instead of waiting —
    /// unless it was answered meanwhile — and the connection closes after earlier answers.
    func parkedAfterEndOfInput(sequence: UInt64) {
        guard !isClosed else { return }
        perform(machine.requestParked(sequence: sequence, environment))
    }

    /// A heap entry for this connection came due.
    func timerFired(deadline: UInt64) {
        guard !isClosed else { return }
        perform(machine.timerFired(deadline: deadline, environment))
    }

    /// Server shutdown: an idle connection closes now; a busy one after its answers.
    func drain() {
        guard !isClosed else { return }
        perform(machine.drainStarted(environment))
    }

    /// True for a keep-alive connection waiting for its next request.
    var isIdleKeepAlive: Bool { !isClosed && machine.isIdleKeepAlive }

    /// When it became idle (monotonic ns).
    var idleSince: UInt64 { machine.idleSince }

    /// Closes the connection if it is an idle keep-alive one (connection cap reached).
    func evictIfIdle() {
        guard !isClosed else { return }
        perform(machine.evictIfIdle())
    }

    /// Closes the descriptor (once) and tells pending sinks the client is gone.
    func close() {
        guard !isClosed else { return }
        perform(machine.closeRequested())
    }

    // MARK: - Executing actions

    private func perform(_ actions: [ConnectionAction]) {
        guard !actions.isEmpty else { return }
        guard !running else {
            queue.append(contentsOf: actions)
            return
        }
        running = true
        // The outermost event's actions run straight from its array; actions of events raised
        // meanwhile queue behind them, in order.
        for action in actions {
            if isClosed { break }
            execute(action)
        }
        var index = 0
        while !isClosed {
            if index < queue.count {
                let action = queue[index]
                index += 1
                execute(action)
            } else if needsFlush {
                // Writes wait until every other action ran: answers produced meanwhile
                // (pipelined requests answered at once) go out in one send.
                needsFlush = false
                flush()
            } else {
                break
            }
        }
        needsFlush = false
        if !queue.isEmpty { queue.removeAll(keepingCapacity: queue.capacity <= 64) }
        running = false
        if !isClosed { updateInterest() }
    }

    private func execute(_ action: ConnectionAction) {
        switch action {
        case .dispatch(let request, let sequence):
            let sink = HTTPResponseSink(eventLoop: loop, connection: self, sequence: sequence)
            sinks.append(sink)
            loop.context.responder.respond(to: request, sink: sink)
            if !isClosed { perform(machine.requestStarted(environment)) }
        case .write:
            needsFlush = true
        case .stopReading:
            wantsRead = false
        case .resumeReading:
            wantsRead = true
        case .armTimer(let deadline):
            loop.scheduleConnectionTimer(fd: fd, serial: serial, deadline: deadline)
        case .notifyPeerFinished:
            var parked: UInt64?
            for sink in sinks where sink.peerFinishedSending() { parked = min(parked ?? sink.sequence, sink.sequence) }
            if let parked { perform(machine.requestParked(sequence: parked, environment)) }
        case .abandonRequests(let from):
            abandonSinks(from: from)
        case .shutdownWrite:
            _ = cepoll_shutdown_write(fd)
            lingering = true
            loop.connectionStartedLingering()
        case .close:
            closeDescriptor()
        case .rejected(let error, let requestID):
            loop.context.logger.debug("http.request_rejected", .status(error.status), .requestID(requestID))
        }
    }

    /// Sends as much of the machine's output as the kernel takes.
    private func flush() {
        while !isClosed && !machine.output.isEmpty {
            var result = IOResult.wouldBlock
            var failed = false
            if let (file, offset) = machine.output.frontFile {
                do {
                    result = try Sys.sendFile(fd, from: file.fd, offset: offset, count: min(file.count - offset, 1 << 20))
                    // The file ended early (it cannot, unless the disk failed): give up.
                    if case .done(0) = result { failed = true }
                } catch {
                    failed = true
                }
            } else {
                machine.output.withFront { a, b in
                    do {
                        result = b.isEmpty ? try Sys.send(fd, a) : try Sys.send2(fd, a, b)
                    } catch {
                        failed = true
                    }
                }
            }
            if failed {
                perform(machine.closeRequested())
                return
            }
            switch result {
            case .done(let n) where n > 0:
                perform(machine.bytesWritten(n, environment))
            default:
                perform(machine.writeWouldBlock(environment))
                return
            }
        }
    }

    private func updateInterest() {
        var desired: UInt32 = wantsRead ? CEPOLL_IN : 0
        if !machine.output.isEmpty { desired |= CEPOLL_OUT }
        guard desired != interest else { return }
        do {
            try loop.setInterest(fd: fd, events: desired)
            interest = desired
        } catch {
            loop.context.logger.warning("http.epoll_mod_failed", .number("errno", Int(error.errno)))
            perform(machine.closeRequested())
        }
    }

    /// Tells the sinks of requests from sequence `from` on that the client is gone.
    private func abandonSinks(from: UInt64 = 0) {
        let abandoned = sinks.filter { $0.sequence >= from }
        guard !abandoned.isEmpty else { return }
        sinks.removeAll { $0.sequence >= from }
        emitAnsweredLines()
        for sink in abandoned { sink.connectionClosed() }
    }

    private func closeDescriptor() {
        guard !isClosed else { return }
        isClosed = true
        socket.close()
        loop.connectionDidClose(self, fd: fd, wasLingering: lingering)
        abandonSinks()
        for held in heldLines { held.record.emit() }
        heldLines = []
    }
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
