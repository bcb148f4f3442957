import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashLogging

/// A registered route: its handler and, when it differs from the default, its body limit.
public struct Route: Sendable {
    /// Body limit in bytes for this route (nil = the application default).
    public var bodyLimit: Int?
    /// Runs on a worker thread; may block on storage or hashing.
    public var handler: @Sendable (APIRequest) throws -> HTTPResponse
    /// For routes that may answer later (long poll): runs on a worker thread and returns
    /// the response, or nil after taking charge of `DeferredResponse` to answer later.
    public var deferred: (@Sendable (APIRequest, DeferredResponse) throws -> HTTPResponse?)?
    /// Runs on the event loop that read the request instead of a worker: only for handlers
    /// that never block and take microseconds (`/healthz`). Saves the two thread hand-offs
    /// a worker costs.
    public var runsOnEventLoop = false

    public init(bodyLimit: Int? = nil, _ handler: @escaping @Sendable (APIRequest) throws -> HTTPResponse) {
        self.bodyLimit = bodyLimit
        self.handler = handler
    }

    /// A route whose handler runs on the event loop (see `runsOnEventLoop`): it must never
    /// block, touch storage or hash.
    /// (A factory, not an initializer: an unlabelled trailing closure `Route { … }` must
    /// never resolve to it.)
    public static func onEventLoop(_ handler: @escaping @Sendable (APIRequest) throws -> HTTPResponse) -> Route {
        var route = Route(handler)
        route.runsOnEventLoop = true
        return route
    }

    /// A route whose handler may park the request and answer later (spec §5 long poll).
    public init(
        bodyLimit: Int? = nil,
        deferred: @escaping @Sendable (APIRequest, DeferredResponse) throws -> HTTPResponse?
    ) {
        self.bodyLimit = bodyLimit
        self.handler = { _ in throw APIError.internalError }
        self.deferred = deferred
    }
}

/// Settings of the API layer (spec §7 limits).
public struct APIConfiguration: Sendable {
    /// Default body limit in bytes (1 MiB).
    public var defaultBodyLimit = 1 << 20
    /// Body limit of batch and sync routes in bytes (4 MiB).
    public var batchBodyLimit = 4 << 20
    /// Worker threads running handlers of `GET`/`HEAD`/`OPTIONS` requests (0 = 4 × cores,
    /// at least 8).
    public var workerThreads = 0
    /// Worker threads running handlers of the other methods — writes, which spend most of
    /// their time blocked until the writer's group commit is durable (0 = 16 × cores, at
    /// least 32). A write holds its thread until its fsync: the number of these threads is
    /// the most writes one group commit can take (8 threads: 5.7 jobs per commit under 32
    /// connections; 32 threads: 17.5 — Benchmarks/profile). Reads keep their own, smaller
    /// pool, where more threads would only add contention on the cores.
    public var writeWorkerThreads = 0
    /// Queued requests beyond which the server answers 503.
    public var workerQueueCapacity = 4096
    /// Browser origins allowed by CORS (exact `scheme://host[:port]`); empty = CORS off.
    public var corsOrigins: Set<String> = []

    public init() {}
}

/// The `HTTPResponder` of Suplash Sync: routes a request on its event loop, runs the
/// handler on the worker pool, maps any error to a problem, logs one line, and sends.
public final class Application: HTTPResponder {
    let router: Router<Route>
    /// Runs `GET`/`HEAD`/`OPTIONS` handlers (and resumed long polls).
    let pool: BlockingPool
    /// Runs the handlers of every other method (see `APIConfiguration.writeWorkerThreads`).
    let writePool: BlockingPool
    let logger: Logger
    let configuration: APIConfiguration
    let services: Services

    public init(services: Services, configuration: APIConfiguration, logger: Logger) {
        self.services = services
        self.configuration = configuration
        self.logger = logger
        var threads = configuration.workerThreads
        if threads <= 0 { threads = max(8, 4 * ProcessInfo.processInfo.activeProcessorCount) }
        self.pool = BlockingPool(threads: threads, queueCapacity: configuration.workerQueueCapacity)
        var writeThreads = configuration.writeWorkerThreads
        if writeThreads <= 0 { writeThreads = max(32, 16 * ProcessInfo.processInfo.activeProcessorCount) }
        self.writePool = BlockingPool(threads: writeThreads, queueCapacity: configuration.workerQueueCapacity)
        var router = Router<Route>()
        Routes.registerAll(into: &router, services: services, configuration: configuration)
        self.router = router
    }

    /// Every registered route as (method, template): what `/openapi.json` must describe
    /// (`suplash-server routes` prints it; a test compares the two).
    public var routes: [(method: String, template: String)] { router.routes }

    /// The route's body limit (before the body is read; 413 past it).
    public func bodyLimit(for head: HTTPRequestHead) -> Int {
        if let route = router.handler(method: head.method, path: head.path) {
            return route.bodyLimit ?? configuration.defaultBodyLimit
        }
        return configuration.defaultBodyLimit
    }

    public func respond(to request: HTTPRequest, sink: HTTPResponseSink) {
        let start = DispatchTime.now().uptimeNanoseconds
        switch router.match(method: request.method, path: request.path) {
        case .notFound:
            finish(APIError.routeNotFound.response(), request: request, route: "unmatched", start: start, sink: sink)
        case .methodNotAllowed(let allowed)
        where request.method == "OPTIONS" && corsOrigin(request) != nil
            && request.headers.contains(name: "Access-Control-Request-Method"):
            // CORS preflight (Fetch standard) for an allowed origin.
            let response = HTTPResponse.empty(
                204,
                headers: [
                    ("Access-Control-Allow-Methods", allowed.joined(separator: ", ")),
                    ("Access-Control-Allow-Headers", Self.corsRequestHeaders),
                    ("Access-Control-Max-Age", "600"),
                ])
            finish(response, request: request, route: "preflight", start: start, sink: sink)
        case .methodNotAllowed(let allowed):
            finish(
                APIError.methodNotAllowed(allowed).response(), request: request, route: "unmatched", start: start,
                sink: sink)
        case .found(let route, let parameters, let template):
            // Buckets in memory are checked here, on the event loop (a 429 costs no worker);
            // buckets in the database take a round trip, so they are checked on the worker.
            let sharedLimits = services.rateLimits.isShared
            let earlyLimits = sharedLimits ? RateLimitOutcome() : checkRateLimits(request, template: template)
            if let limited = earlyLimits.limited {
                finish(
                    limited.response(), request: request, route: template, start: start, sink: sink,
                    extraHeaders: earlyLimits.headers)
                return
            }
            if route.runsOnEventLoop && (!sharedLimits || Self.unlimitedRoutes.contains(template)) {
                let response: HTTPResponse
                do {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let decoded = try RequestDecoding.decode(request, limit: route.bodyLimit ?? configuration.defaultBodyLimit)
                    response = try route.handler(
                        try APIRequest(http: decoded, parameters: parameters, route: template, now: now))
                } catch {
                    response = problem(for: error, request: request, route: template)
                }
                finish(response, request: request, route: template, start: start, sink: sink, extraHeaders: earlyLimits.headers)
                return
            }
            let accepted = pool(for: request.method).submit { [self] in
                let limits = sharedLimits ? checkRateLimits(request, template: template) : earlyLimits
                if let limited = limits.limited {
                    finish(
                        limited.response(), request: request, route: template, start: start, sink: sink,
                        extraHeaders: limits.headers)
                    return
                }
                let response: HTTPResponse
                do {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let limit = route.bodyLimit ?? configuration.defaultBodyLimit
                    let decoded = try RequestDecoding.decode(request, limit: limit)
                    let apiRequest = try APIRequest(http: decoded, parameters: parameters, route: template, now: now)
                    if let deferred = route.deferred {
                        let later = DeferredResponse(sink: sink, pool: pool) { [self] response in
                            finish(response, request: request, route: template, start: start, sink: sink)
                        }
                        guard let immediate = try deferred(apiRequest, later) else { return }
                        response = immediate
                    } else {
                        response = try runIdempotent(apiRequest, route.handler)
                    }
                } catch {
                    response = problem(for: error, request: request, route: template)
                }
                finish(response, request: request, route: template, start: start, sink: sink, extraHeaders: limits.headers)
            }
            if !accepted {
                finish(
                    APIError.unavailable("The server is overloaded; retry later.").response(), request: request,
                    route: template, start: start, sink: sink)
            }
        }
    }

    /// The problem response for a handler error (the one mapping), logging bugs.
    func problem(for error: any Error, request: HTTPRequest, route: String) -> HTTPResponse {
        let apiError = APIError(error)
        if apiError.status >= 500 && apiError.status != 503 {
            logger.error(
                "handler_failed", .requestID(request.requestID), .route(route),
                .errorType(String(reflecting: type(of: error))))
        }
        return apiError.response()
    }

    /// Request headers a browser client may send (CORS preflight answer).
    static let corsRequestHeaders =
        "Authorization, Content-Type, Content-Encoding, Idempotency-Key, If-Match, "
        + "If-None-Match, X-Device-ID, X-Request-ID"
    /// Response headers a browser client may read.
    static let corsExposedHeaders =
        "ETag, Location, Content-Location, X-Request-ID, Retry-After, RateLimit, "
        + "RateLimit-Policy, Idempotent-Replayed"

    /// The request's `Origin` when CORS allows it (exact match against the configured list).
    private func corsOrigin(_ request: HTTPRequest) -> String? {
        guard !configuration.corsOrigins.isEmpty, let origin = request.headers.first(name: "Origin"),
            configuration.corsOrigins.contains(origin)
        else { return nil }
        return origin
    }

    /// Operational routes are never limited (load balancers and scrapers poll them).
    static let unlimitedRoutes: Set<String> = ["/healthz", "/readyz", "/metrics", "/openapi.json"]

    /// The address, `/v1/auth/*` and device layers (spec §7); the user layer runs in the
    /// authenticator once the caller is known.
    private func checkRateLimits(_ request: HTTPRequest, template: String) -> RateLimitOutcome {
        var outcome = RateLimitOutcome()
        guard !Self.unlimitedRoutes.contains(template) else { return outcome }
        let limits = services.rateLimits
        let address = limits.clientAddress(
            peer: request.remoteAddress,
            forwardedFor: request.headers.first(name: "X-Forwarded-For"))
        let now = RateLimits.now()
        var tightest = 2.0
        if template.hasPrefix("/v1/auth/"), let layer = limits.authPerAddress {
            outcome.apply(layer, layer.take(address, now: now), tightest: &tightest)
        }
        if let layer = limits.perAddress {
            outcome.apply(layer, layer.take(address, now: now), tightest: &tightest)
        }
        if let layer = limits.perDevice, let device = request.headers.first(name: "X-Device-ID"), device.utf8.count <= 64 {
            outcome.apply(layer, layer.take(device.lowercased(), now: now), tightest: &tightest)
        }
        return outcome
    }

    /// Adds rate-limit and security headers, compresses, records metrics, logs one line
    /// (typed fields only) and sends.
    private func finish(
        _ response: HTTPResponse, request: HTTPRequest, route: String, start: UInt64, sink: HTTPResponseSink,
        extraHeaders: [(String, String)] = []
    ) {
        var response = response
        for (name, value) in extraHeaders where !response.headers.contains(name: name) {
            response.headers.add(name: name, value: value)
        }
        response.headers.add(name: "X-Content-Type-Options", value: "nosniff")
        if let origin = corsOrigin(request) {
            response.headers.add(name: "Access-Control-Allow-Origin", value: origin)
            response.headers.add(name: "Access-Control-Expose-Headers", value: Self.corsExposedHeaders)
            response.headers.add(name: "Vary", value: "Origin")
        }
        if request.headers.contains(name: "Authorization") {
            response.headers.add(name: "Cache-Control", value: "no-store")
        }
        ResponseCompression.apply(to: &response, acceptEncoding: request.headers.first(name: "Accept-Encoding"))
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000_000
        services.metrics.record(route: route, method: request.method, status: response.status, seconds: seconds)
        // Formatted here, emitted on the connection's loop (its log buffer keeps the order).
        let line = logger.record(
            .info, "request", .requestID(request.requestID), .method(request.method), .route(route),
            .status(response.status), .durationMs(seconds * 1000))
        sink.send(response, log: line)
    }

    /// The pool that runs handlers of `method`.
    func pool(for method: String) -> BlockingPool {
        switch method {
        case "GET", "HEAD", "OPTIONS": pool
        default: writePool
        }
    }

    /// Stops the worker pools after the HTTP server has drained.
    public func shutdown() {
        writePool.shutdown()
        pool.shutdown()
    }
}
