/// What a connection state machine asks of its surroundings: the time, ids and the
/// responder's body limit. The event loop provides the real ones; tests a fake clock.
protocol ConnectionEnvironment {
    /// Monotonic time in nanoseconds (the loop's clock, refreshed after every `epoll_wait`).
    var now: UInt64 { get }
    /// `Date: <IMF-fixdate>\r\n` for the current second (RFC 9110 §6.6.1).
    func dateLine() -> [UInt8]
    /// A fresh request id for a request that did not bring a valid `X-Request-ID`.
    func makeRequestID() -> String
    /// `HTTPResponder.bodyLimit(for:)`: the largest body accepted for this head, in bytes.
    func bodyLimit(for head: HTTPRequestHead) -> Int
}

/// What the event-loop code must do after a state-machine event. Actions are executed in
/// order; a `close` ends the connection and makes every later action moot.
enum ConnectionAction {
    /// Hand `request` to the responder with a sink for response `sequence`, then report
    /// `requestStarted()` (the next request is decided only after this one started, so a
    /// synchronous answer counts against the budget before another request starts).
    /// Boxed, so that an action is a few words and action arrays copy cheaply.
    indirect case dispatch(HTTPRequest, sequence: UInt64)
    /// Bytes are waiting in `ConnectionStateMachine.output`: send what the kernel takes.
    case write
    /// Stop asking for readability (back-pressure, or input ended).
    case stopReading
    /// Ask for readability again.
    case resumeReading
    /// Call `timerFired(deadline:)` at `deadline` (monotonic ns). There is no cancel: an
    /// armed deadline stays armed, and when it fires with nothing due the machine ignores it
    /// or asks for the next one; a later deadline is not armed until the earlier fires.
    case armTimer(deadline: UInt64)
    /// The client half-closed: tell every in-flight sink; if one is parked (has `onClose`),
    /// report the earliest such with `requestParked(sequence:)`.
    case notifyPeerFinished
    /// The in-flight requests from sequence `from` on will not be answered: tell their sinks
    /// the client is gone.
    case abandonRequests(from: UInt64)
    /// The last answer is out: shut down the write side and linger (RFC 9112 §9.6).
    case shutdownWrite
    /// Close the descriptor.
    case close
    /// The engine answered an error itself (for the debug log).
    case rejected(HTTPEngineError, requestID: String)
}

/// The HTTP/1.1 connection as a value type: every decision of one connection — reading,
/// parsing, the pipeline of requests, writing order, timeouts, half-close, drain, lingering
/// close — with no system calls and no clock. Events come in as method calls (time through
/// `ConnectionEnvironment.now`), each returns the actions the loop executes.
///
/// ```
/// open ──Connection: close / HTTP/1.0 / engine error──▶ closing ──answered+flushed──▶ lingering ─EOF/deadline─▶ closed
///  │                                                       │
///  │ EOF (half-close): answer what was received ───────────┘ (then closed, not lingering)
///  └─ idle / write-stall timeout, socket error, parked request after EOF ──▶ closed
/// ```
/// While `open` the machine reads when fewer than `maxPipelined` requests are outstanding
/// and the bytes it holds (`queuedBytes`) are within `memoryBudget`; otherwise it stops
/// reading (back-pressure) until answers drain, and starts no further request while over
/// the budget. Responses go to `output` in request order.
struct ConnectionStateMachine {
    /// Limits and timeouts (nanoseconds, bytes).
    struct Configuration {
        var headerTimeout: UInt64
        var idleTimeout: UInt64
        var lingerTimeout: UInt64
        var lingerMaxBytes: Int
        var maxPipelined: Int
        /// Bytes a connection may hold (requests read, answers not taken by the client)
        /// before it stops reading and starts no further request.
        var memoryBudget: Int
        var parserLimits: HTTPParserLimits
        var errorResponse: @Sendable (HTTPEngineError, _ requestID: String) -> HTTPResponse

        init(_ server: HTTPServerConfiguration) {
            headerTimeout = nanoseconds(server.headerReadTimeout)
            idleTimeout = nanoseconds(server.keepAliveIdleTimeout)
            lingerTimeout = nanoseconds(server.lingerTimeout)
            lingerMaxBytes = server.lingerMaxBytes
            maxPipelined = max(1, server.maxPipelined)
            memoryBudget = max(1, server.connectionMemoryBudget)
            parserLimits = server.parserLimits
            errorResponse = server.errorResponse
        }
    }

    enum Phase: Equatable {
        /// Reading requests (subject to back-pressure).
        case open
        /// No further request will be read (input is discarded); close once answered.
        case closing
        /// Write side shut down; discarding input until EOF, `deadline` or the byte cap.
        case lingering(deadline: UInt64)
        case closed
    }

    enum TimerKind: Equatable {
        case none, idle, header, body, writeStall, linger
    }

    /// One request's place in the response order.
    struct Slot {
        enum Stage {
            /// Read, waiting for its turn to start (pipelining order rule).
            case waiting(HTTPRequest)
            /// Handed to the responder, not answered yet.
            case running
            /// Answered; waits for the answers before it.
            case answered(HTTPResponse)
            /// A ready interim answer (`100 Continue`), written as is.
            case interim([UInt8])

            /// What a slot in this stage holds, for `heldBytes` (read in place: a static
            /// function taking the stage by value copied the request or answer first).
            var cost: Int {
                switch self {
                case .waiting(let request): request.body.count + ConnectionStateMachine.perMessageOverhead
                case .running: ConnectionStateMachine.perMessageOverhead
                case .answered(let response): response.body.count + ConnectionStateMachine.perMessageOverhead
                case .interim(let bytes): bytes.count
                }
            }
        }
        let sequence: UInt64
        let requestID: String
        let isHead: Bool
        /// The request asked for (or the engine decided on) closing after this response.
        let closeAfter: Bool
        /// An HTTP/1.0 request that asked for keep-alive (the answer says so).
        let http10KeepAlive: Bool
        /// GET, HEAD or OPTIONS (RFC 9110 §9.2.1); these may run in parallel.
        let isSafe: Bool
        var stage: Stage
    }

    let configuration: Configuration
    /// The peer's IP address as text, passed on in every request.
    let remoteAddress: String
    private(set) var phase: Phase = .open
    private var parser: HTTPRequestParser
    private var inbound: [UInt8] = []
    private var inboundStart = 0
    private(set) var slots: [Slot] = []
    private var nextSequence: UInt64 = 0
    private var currentHead: ParsedHead?
    private var currentRequestID = ""
    /// The client finished sending (EOF): nothing more is read, the requests already
    /// received are still answered (RFC 9112 §9.6), then the connection closes.
    private(set) var inputEnded = false
    private(set) var draining = false
    /// Input bytes read and thrown away after the last request that will be answered.
    private var discarded = 0
    /// Response bytes not yet taken by the kernel, in order.
    private(set) var output = OutputQueue()
    private var outputAdded = false
    /// The kernel refused bytes and writability is awaited.
    private var writeBlocked = false
    /// The largest in-memory answer body produced on this connection, in bytes.
    private var largestAnswer = 0
    /// A `dispatch` action is out and `requestStarted()` has not come back yet.
    private var dispatchPending = false
    /// Bytes the slots hold (see `cost`), kept as they change.
    private var heldBytes = 0
    /// Slots in `.running`.
    private var runningCount = 0
    /// Slots in `.waiting`.
    private var waitingCount = 0
    /// Slots of unsafe requests in `.waiting` or `.running` (not answered yet).
    private var unsafeOutstanding = 0

    private var headDeadline: UInt64 = 0
    private var idleDeadline: UInt64 = 0
    private var bodyDeadline: UInt64 = 0
    private var writeDeadline: UInt64 = 0
    /// The earliest deadline the loop was asked to report (0: none).
    private(set) var armedDeadline: UInt64 = 0
    /// Whether the loop was last told to read.
    private(set) var reading = true

    private var actions: [ConnectionAction] = []

    init(configuration: Configuration, remoteAddress: String) {
        self.configuration = configuration
        self.remoteAddress = remoteAddress
        parser = HTTPRequestParser(limits: configuration.parserLimits)
    }

    // MARK: - Derived state

    /// True while a request body is being read.
    private var readingBody: Bool { currentHead != nil }

    /// Fixed cost counted per request or answer held (its head, fields, bookkeeping).
    static let perMessageOverhead = 512

    /// What this connection holds in memory, in bytes (spec §7 "Memory per connection"):
    /// unparsed input, requests read and not answered, answers not yet taken by the client.
    /// A running request counts as large as the largest answer seen on this connection (its
    /// answer is coming); file bodies are on disk and count only their overhead.
    var queuedBytes: Int {
        inbound.count - inboundStart + output.memoryBytes + heldBytes + runningCount * largestAnswer
    }

    /// What a slot in `stage` holds, for `heldBytes`.
    private static func cost(_ stage: Slot.Stage) -> Int {
        stage.cost
    }

    /// `heldBytes` recomputed from the slots (for the debug-build consistency check).
    private var recomputedHeldBytes: Int {
        slots.reduce(0) { $0 + Self.cost($1.stage) }
    }

    /// Replaces the stage of `slots[index]`, keeping `heldBytes`, `runningCount`,
    /// `waitingCount` and `unsafeOutstanding` in step.
    /// - Returns: the stage replaced, moved out of the slot (not copied).
    @discardableResult
    private mutating func setStage(_ stage: consuming Slot.Stage, at index: Int) -> Slot.Stage {
        var old = stage
        swap(&old, &slots[index].stage)
        let unsafe = !slots[index].isSafe
        switch old {
        case .running:
            runningCount -= 1
            if unsafe { unsafeOutstanding -= 1 }
        case .waiting:
            waitingCount -= 1
            if unsafe { unsafeOutstanding -= 1 }
        case .answered, .interim: break
        }
        heldBytes -= old.cost
        heldBytes += slots[index].stage.cost
        switch slots[index].stage {
        case .running:
            runningCount += 1
            if unsafe { unsafeOutstanding += 1 }
        case .waiting:
            waitingCount += 1
            if unsafe { unsafeOutstanding += 1 }
        case .answered, .interim: break
        }
        return old
    }

    /// Removes the first slot (written or abandoned).
    /// - Returns: its stage.
    @discardableResult
    private mutating func removeFirstSlot() -> Slot.Stage {
        let old = setStage(.interim([]), at: 0)
        slots.removeFirst()
        return old
    }

    /// Drops every slot.
    private mutating func removeAllSlots() {
        slots = []
        heldBytes = 0
        runningCount = 0
        waitingCount = 0
        unsafeOutstanding = 0
    }

    /// True when another request may be read: few enough requests outstanding, and the
    /// bytes held within the budget.
    private var mayReadMore: Bool {
        mayParseMore && queuedBytes <= configuration.memoryBudget
    }

    /// True when another request may be parsed from input already read: as `mayReadMore`,
    /// but not counting that unparsed input (at most about one read, left over by
    /// back-pressure), which would otherwise keep itself from ever being parsed.
    private var mayParseMore: Bool {
        slots.count < configuration.maxPipelined
            && queuedBytes - (inbound.count - inboundStart) <= configuration.memoryBudget
    }

    /// True when input is read only to be discarded (after the last answered request).
    var isDiscardingInput: Bool {
        switch phase {
        case .closing, .lingering: true
        case .open, .closed: false
        }
    }

    /// A keep-alive connection waiting for its next request: it answered at least one,
    /// holds nothing and has no byte of a next request (RFC 9112 §9.6 lets the server close
    /// it at any time; at the connection cap the oldest such are closed first).
    var isIdleKeepAlive: Bool {
        phase == .open && nextSequence > 0 && slots.isEmpty && output.isEmpty && !readingBody
            && parser.isIdle && inboundStart >= inbound.count && !inputEnded
    }

    /// When the connection last became idle (monotonic ns; meaningful while `isIdleKeepAlive`).
    var idleSince: UInt64 { idleDeadline &- configuration.idleTimeout }

    private var wantsRead: Bool {
        if inputEnded { return false }
        switch phase {
        case .open: return readingBody || mayReadMore
        case .closing, .lingering: return true
        case .closed: return false
        }
    }

    // MARK: - Events

    /// The connection was accepted: the header-read timer starts.
    mutating func start<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        headDeadline = env.now &+ configuration.headerTimeout
        return finish(env)
    }

    /// Bytes arrived from the socket.
    mutating func bytesRead<E: ConnectionEnvironment>(_ bytes: UnsafeRawBufferPointer, _ env: E) -> [ConnectionAction] {
        switch phase {
        case .closed:
            return []
        case .closing, .lingering:
            discarded += bytes.count
            if discarded > configuration.lingerMaxBytes { closeNow() }
        case .open:
            if inputEnded { return [] }
            if readingBody { bodyDeadline = env.now &+ configuration.idleTimeout }
            ingest(bytes, env)
            progress(env)
        }
        return finish(env)
    }

    /// The peer finished sending (EOF: a half-close with `shutdown(SHUT_WR)`, or a full
    /// close — the two look the same). Per RFC 9112 §9.6 the requests already received are
    /// still answered, in order, and the connection then closes; nothing more is read. A
    /// partial request is discarded without an answer (it was never dispatched). If an
    /// in-flight request is parked (`onClose` registered), the loop reports it through
    /// `requestParked(sequence:)`: it and every later request are abandoned, and the
    /// connection closes once the answers before it are written.
    mutating func peerHalfClosed<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        switch phase {
        case .closed:
            return []
        case .lingering:
            closeNow()
            return finish(env)
        case .open, .closing:
            break
        }
        guard !inputEnded else { return [] }
        inputEnded = true
        currentHead = nil
        inbound = []
        inboundStart = 0
        phase = .closing
        if runningCount > 0 {
            actions.append(.notifyPeerFinished)
        }
        progress(env)
        return finish(env)
    }

    /// In-flight request `sequence` is parked (its sink has `onClose`) while the client has
    /// half-closed: it and every later request are abandoned instead of waiting for an
    /// answer nobody may read; the answers to earlier requests are still written (RFC 9112
    /// §9.6), then the connection closes.
    mutating func requestParked<E: ConnectionEnvironment>(sequence: UInt64, _ env: E) -> [ConnectionAction] {
        guard inputEnded, phase != .closed,
            let index = slots.firstIndex(where: { $0.sequence == sequence }),
            case .running = slots[index].stage
        else { return [] }
        while slots.count > index {
            setStage(.interim([]), at: slots.count - 1)
            slots.removeLast()
        }
        actions.append(.abandonRequests(from: sequence))
        progress(env)
        return finish(env)
    }

    /// The responder answered request `sequence`.
    mutating func responseReady<E: ConnectionEnvironment>(sequence: UInt64, response: HTTPResponse, _ env: E) -> [ConnectionAction] {
        guard phase != .closed,
            let index = slots.firstIndex(where: { $0.sequence == sequence })
        else { return [] }
        guard case .running = slots[index].stage else { return [] }
        setStage(.answered(response), at: index)
        largestAnswer = max(largestAnswer, response.bodyFile == nil ? response.body.count : 0)
        progress(env)
        return finish(env)
    }

    /// The responder returned from `respond(to:sink:)` for the last `dispatch`.
    mutating func requestStarted<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        // Only a one-at-a-time start holds the next request back; the other starts of a
        // batch changed nothing since the event that produced them ran `progress`.
        guard dispatchPending else { return [] }
        dispatchPending = false
        guard phase != .closed else { return [] }
        progress(env)
        return finish(env)
    }

    /// The kernel took `count` bytes from the front of `output`.
    mutating func bytesWritten<E: ConnectionEnvironment>(_ count: Int, _ env: E) -> [ConnectionAction] {
        guard phase != .closed else { return [] }
        output.consume(count)
        writeDeadline = env.now &+ configuration.idleTimeout
        if output.isEmpty { writeBlocked = false }
        progress(env)
        return finish(env)
    }

    /// The kernel took nothing: writability is awaited (the write-stall clock starts).
    mutating func writeWouldBlock<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        guard phase != .closed else { return [] }
        if !writeBlocked {
            writeBlocked = true
            writeDeadline = env.now &+ configuration.idleTimeout
        }
        return finish(env)
    }

    /// The socket became writable again.
    mutating func socketWritable<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        guard phase != .closed, !output.isEmpty else { return [] }
        outputAdded = true
        return finish(env)
    }

    /// A deadline armed with `armTimer` came due.
    mutating func timerFired<E: ConnectionEnvironment>(deadline: UInt64, _ env: E) -> [ConnectionAction] {
        guard phase != .closed, deadline == armedDeadline else { return [] }
        armedDeadline = 0
        let (due, kind) = currentDeadline()
        guard due != 0 else { return finish(env) }
        if due > env.now { return finish(env) }
        switch kind {
        case .none:
            break
        case .idle, .writeStall, .linger:
            closeNow()
        case .header, .body:
            let requestID = currentHead != nil ? currentRequestID : env.makeRequestID()
            currentHead = nil
            queueError(.requestTimeout, requestID: requestID, env)
            progress(env)
        }
        return finish(env)
    }

    /// Server shutdown began: an idle connection closes now; a busy one after its answers
    /// (the last says `Connection: close`); a request arriving now gets 503.
    mutating func drainStarted<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        draining = true
        if phase == .open && !readingBody && slots.isEmpty && parser.isIdle && output.isEmpty {
            closeNow()
        }
        return finish(env)
    }

    /// The server needs the slot of this idle keep-alive connection (connection cap):
    /// close it silently. A connection that is not idle is left alone.
    mutating func evictIfIdle() -> [ConnectionAction] {
        guard isIdleKeepAlive else { return [] }
        closeNow()
        return takeActions()
    }

    /// A socket error (or the loop stopping): close now.
    mutating func closeRequested() -> [ConnectionAction] {
        closeNow()
        return takeActions()
    }

    // MARK: - Input

    private mutating func ingest<E: ConnectionEnvironment>(_ bytes: UnsafeRawBufferPointer, _ env: E) {
        if inboundStart >= inbound.count {
            // Fast path: nothing buffered, parse straight from the caller's buffer.
            inbound.removeAll(keepingCapacity: true)
            inboundStart = 0
            let used = processInput(bytes, env)
            if used < bytes.count, phase == .open {
                inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...]))
            }
        } else {
            inbound.append(contentsOf: bytes)
            processBuffered(env)
        }
    }

    private mutating func processBuffered<E: ConnectionEnvironment>(_ env: E) {
        guard inboundStart < inbound.count, phase == .open, mayParseMore else { return }
        let start = inboundStart
        let buffer = inbound
        let used = buffer.withUnsafeBytes { processInput(UnsafeRawBufferPointer(rebasing: $0[start...]), env) }
        inboundStart += used
        if phase != .open || inboundStart >= inbound.count {
            inbound.removeAll(keepingCapacity: inbound.capacity <= 256 * 1024)
            inboundStart = 0
        } else if inboundStart > 64 * 1024 {
            inbound.removeFirst(inboundStart)
            inboundStart = 0
        }
    }

    /// Runs the parser over `bytes` while the state allows reading.
    /// - Returns: how many bytes were consumed.
    private mutating func processInput<E: ConnectionEnvironment>(_ bytes: UnsafeRawBufferPointer, _ env: E) -> Int {
        var offset = 0
        while phase == .open && (readingBody || mayParseMore) {
            let (consumed, event) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            guard let event else { break }
            switch event {
            case .head(let head):
                handleHead(head, env)
            case .body(let body):
                if let head = currentHead {
                    currentHead = nil
                    enqueueRequest(head, requestID: currentRequestID, body: body, env)
                }
            case .error(let error):
                let requestID = currentHead != nil ? currentRequestID : (parser.requestIDSoFar ?? env.makeRequestID())
                currentHead = nil
                queueError(error, requestID: requestID, env)
            }
        }
        if phase == .open && !readingBody && !parser.isIdle && headDeadline == 0 {
            headDeadline = env.now &+ configuration.headerTimeout
        }
        return offset
    }

    private mutating func handleHead<E: ConnectionEnvironment>(_ head: ParsedHead, _ env: E) {
        headDeadline = 0
        let requestID = head.incomingRequestID ?? env.makeRequestID()
        if draining {
            queueError(.shuttingDown, requestID: requestID, env)
            return
        }
        if head.framing == .none {
            enqueueRequest(head, requestID: requestID, body: [], env)
            return
        }
        if let error = parser.beginBody(limit: env.bodyLimit(for: head.head)) {
            queueError(error, requestID: requestID, env)
            return
        }
        currentHead = head
        currentRequestID = requestID
        bodyDeadline = env.now &+ configuration.idleTimeout
        if head.expectContinue && head.head.version.minor >= 1 {
            appendSlot(
                requestID: "", isHead: false, closeAfter: false, http10KeepAlive: false,
                stage: .interim(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)))
            writeReadySlots(env)
        }
    }

    /// A complete request joins the pipeline; it starts when the order rule allows.
    private mutating func enqueueRequest<E: ConnectionEnvironment>(_ head: ParsedHead, requestID: String, body: [UInt8], _ env: E) {
        let request = HTTPRequest(head: head.head, body: body, requestID: requestID, remoteAddress: remoteAddress)
        appendSlot(
            requestID: requestID, isHead: head.isHead, closeAfter: !head.keepAlive,
            http10KeepAlive: head.http10KeepAlive, isSafe: isSafeMethod(head.head.method), stage: .waiting(request))
        if !head.keepAlive { phase = .closing }
        dispatchReady()
    }

    /// Starts every waiting request the pipelining order allows (RFC 9112 §9.3.2, spec §7):
    /// an unsafe request only once every earlier request on the connection is answered
    /// (its response produced), a safe one once every earlier unsafe one is. Safe requests
    /// run in parallel; answers are written in request order regardless.
    private mutating func dispatchReady() {
        guard !dispatchPending, waitingCount > 0 else { return }
        // Room for a batch of starts at once (the array grew one doubling at a time per event).
        if actions.capacity < actions.count + 2 { actions.reserveCapacity(Swift.max(16, 2 * actions.count)) }
        // The usual case, a request just read behind started ones: the order rule needs only
        // the counters (every earlier slot is started or answered), not a walk over the slots.
        let last = slots.count - 1
        if waitingCount == 1, case .waiting = slots[last].stage {
            let allowed = slots[last].isSafe ? unsafeOutstanding == 0 : runningCount == 0
            if allowed && mayStartRequest { _ = startRequest(at: last) }
            return
        }
        var earlierUnanswered = false
        var earlierUnsafeUnanswered = false
        for index in slots.indices {
            let isSafe = slots[index].isSafe
            switch slots[index].stage {
            case .answered, .interim:
                continue
            case .running:
                break
            case .waiting:
                // The stage is matched without binding its request: a binding copies the
                // request (and retains its fields) for every waiting slot on every walk.
                let allowed = isSafe ? !earlierUnsafeUnanswered : !earlierUnanswered
                if allowed && mayStartRequest && !startRequest(at: index) { return }
            }
            earlierUnanswered = true
            if !isSafe { earlierUnsafeUnanswered = true }
        }
    }

    /// Starts the waiting request in `slots[index]`.
    /// - Returns: false when no further request may start before `requestStarted`.
    private mutating func startRequest(at index: Int) -> Bool {
        guard case .waiting(let request) = setStage(.running, at: index) else { return true }
        actions.append(.dispatch(request, sequence: slots[index].sequence))
        // A request started after the client's EOF learns it too (a long poll
        // must not keep a half-closed connection open).
        if inputEnded { actions.append(.notifyPeerFinished) }
        // Until an answer's size is known, one request starts at a time (the next
        // after `requestStarted`, when a synchronous answer already counts); after
        // that, running requests count as large as the largest answer, so several
        // may start at once while the estimate fits the budget.
        if largestAnswer == 0 {
            dispatchPending = true
            return false
        }
        return true
    }

    /// Memory allows starting a request: within the budget, or nothing else is in flight or
    /// unsent (so a connection over the budget by one large request still makes progress).
    private var mayStartRequest: Bool {
        if queuedBytes <= configuration.memoryBudget { return true }
        if !output.isEmpty { return false }
        return !slots.contains { slot in
            if case .waiting = slot.stage { return false }
            return true
        }
    }

    @discardableResult
    private mutating func appendSlot(
        requestID: String, isHead: Bool, closeAfter: Bool, http10KeepAlive: Bool,
        isSafe: Bool = true, stage: Slot.Stage
    ) -> UInt64 {
        let sequence = nextSequence
        nextSequence &+= 1
        slots.append(
            Slot(
                sequence: sequence, requestID: requestID, isHead: isHead, closeAfter: closeAfter,
                http10KeepAlive: http10KeepAlive, isSafe: isSafe, stage: stage))
        heldBytes += Self.cost(stage)
        if case .waiting = stage {
            waitingCount += 1
            if !isSafe { unsafeOutstanding += 1 }
        }
        return sequence
    }

    /// Queues an engine error answer after everything in flight; no further reading.
    private mutating func queueError<E: ConnectionEnvironment>(_ error: HTTPEngineError, requestID: String, _ env: E) {
        actions.append(.rejected(error, requestID: requestID))
        let response = configuration.errorResponse(error, requestID)
        appendSlot(requestID: requestID, isHead: false, closeAfter: true, http10KeepAlive: false, stage: .answered(response))
        phase = .closing
        writeReadySlots(env)
    }

    // MARK: - Output

    /// Moves every answer at the head of the order into `output`.
    private mutating func writeReadySlots<E: ConnectionEnvironment>(_ env: E) {
        // The first slot is read in place (a copy of the whole slot cost more than its answer's
        // head); only the answer is taken out before the slot goes.
        while !slots.isEmpty {
            switch slots[0].stage {
            case .running, .waiting:
                return finishWriteReady(env)
            case .interim:
                guard case .interim(let bytes) = removeFirstSlot() else { continue }
                output.appendOwned { $0.append(contentsOf: bytes) }
                outputAdded = true
            case .answered:
                let first = (
                    requestID: slots[0].requestID, isHead: slots[0].isHead, closeAfter: slots[0].closeAfter,
                    http10KeepAlive: slots[0].http10KeepAlive
                )
                guard case .answered(let response) = removeFirstSlot() else { continue }
                var closing = first.closeAfter || responseAsksToClose(response)
                if !closing && slots.isEmpty {
                    if phase == .closing { closing = true }
                    if draining && parser.isIdle && !readingBody { closing = true }
                }
                serializeResponse(
                    response, requestID: first.requestID, isHead: first.isHead, closing: closing,
                    http10KeepAlive: first.http10KeepAlive, dateLine: env.dateLine(), into: &output)
                outputAdded = true
                if closing {
                    phase = .closing
                    abandonRemaining()
                    return finishWriteReady(env)
                }
            }
        }
        finishWriteReady(env)
    }

    private mutating func finishWriteReady<E: ConnectionEnvironment>(_ env: E) {
        if slots.isEmpty { idleDeadline = env.now &+ configuration.idleTimeout }
    }

    private mutating func abandonRemaining() {
        guard let first = slots.first else { return }
        removeAllSlots()
        actions.append(.abandonRequests(from: first.sequence))
    }

    /// After any change: write what is ready, close or linger when done, resume parsing
    /// buffered input after back-pressure.
    private mutating func progress<E: ConnectionEnvironment>(_ env: E) {
        var rounds = 0
        while phase != .closed && rounds < 16 {
            rounds += 1
            writeReadySlots(env)
            dispatchReady()
            switch phase {
            case .closing:
                if slots.isEmpty && output.isEmpty {
                    // After the client's EOF there is nothing left to linger for.
                    if inputEnded { closeNow() } else { startLingering(env) }
                }
            case .open:
                if mayParseMore && inboundStart < inbound.count {
                    processBuffered(env)
                    continue
                }
                if draining && slots.isEmpty && output.isEmpty && parser.isIdle && !readingBody {
                    closeNow()
                }
            case .lingering, .closed:
                break
            }
            break
        }
    }

    private mutating func startLingering<E: ConnectionEnvironment>(_ env: E) {
        phase = .lingering(deadline: env.now &+ configuration.lingerTimeout)
        inbound = []
        inboundStart = 0
        actions.append(.shutdownWrite)
    }

    private mutating func closeNow() {
        guard phase != .closed else { return }
        phase = .closed
        currentHead = nil
        removeAllSlots()
        output = OutputQueue()
        actions.append(.close)
    }

    // MARK: - Interest and timers

    private func currentDeadline() -> (UInt64, TimerKind) {
        switch phase {
        case .closed:
            return (0, .none)
        case .lingering(let deadline):
            return (deadline, .linger)
        case .open, .closing:
            break
        }
        if !output.isEmpty { return (writeDeadline, .writeStall) }
        guard phase == .open else { return (0, .none) }
        if readingBody { return (bodyDeadline, .body) }
        guard mayReadMore else { return (0, .none) }
        if headDeadline != 0 { return (headDeadline, .header) }
        if slots.isEmpty { return (idleDeadline, .idle) }
        return (0, .none)
    }

    /// Appends the interest, write and timer actions the event's changes call for.
    private mutating func finish<E: ConnectionEnvironment>(_ env: E) -> [ConnectionAction] {
        assert(heldBytes == recomputedHeldBytes, "heldBytes \(heldBytes) != \(recomputedHeldBytes)")
        assert(runningCount == slots.count { if case .running = $0.stage { true } else { false } }, "runningCount")
        assert(waitingCount == slots.count { if case .waiting = $0.stage { true } else { false } }, "waitingCount")
        assert(
            unsafeOutstanding
                == slots.count { slot in
                    switch slot.stage {
                    case .waiting, .running: !slot.isSafe
                    case .answered, .interim: false
                    }
                }, "unsafeOutstanding")
        if phase != .closed {
            if outputAdded && !output.isEmpty { actions.append(.write) }
            outputAdded = false
            let read = wantsRead
            if read != reading {
                reading = read
                actions.append(read ? .resumeReading : .stopReading)
            }
            let (deadline, _) = currentDeadline()
            // An armed deadline stays armed even when nothing is due any more: heap entries
            // cannot be taken back cheaply, and one that fires early is ignored or re-armed
            // (`timerFired`). So a busy keep-alive connection has one entry, not one per request.
            if deadline != 0 && (armedDeadline == 0 || deadline < armedDeadline) {
                armedDeadline = deadline
                actions.append(.armTimer(deadline: deadline))
            }
        }
        return takeActions()
    }

    private mutating func takeActions() -> [ConnectionAction] {
        guard !actions.isEmpty else { return [] }
        let taken = actions
        actions = []
        return taken
    }
}

/// GET, HEAD and OPTIONS: the safe methods the engine lets run in parallel on one connection
/// (RFC 9110 §9.2.1; TRACE is not served). Every other method counts as unsafe.
private func isSafeMethod(_ method: String) -> Bool {
    method == "GET" || method == "HEAD" || method == "OPTIONS"
}

private func responseAsksToClose(_ response: HTTPResponse) -> Bool {
    for field in response.headers where asciiCaseInsensitiveEquals(field.name, "connection") {
        for element in field.value.split(separator: ",") where asciiCaseInsensitiveEquals(String(element.trimmingOWS()), "close") {
            return true
        }
    }
    return false
}
