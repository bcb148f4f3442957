import SuplashHTTP

extension Application {
    /// Runs `handler` under the Idempotency-Key rules (spec §7) when the request is a POST,
    /// PATCH or DELETE carrying the header; otherwise just runs it.
    ///
    /// The caller is the authenticated user (`u:<id>`) or admin key (`a:<name>`), or the
    /// client address (`ip:<address>`) when no credentials are sent. A request whose
    /// credentials are invalid runs without the key (its handler answers 401).
    func runIdempotent(
        _ request: APIRequest,
        _ handler: @Sendable (APIRequest) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        guard ["POST", "PATCH", "DELETE"].contains(request.http.method),
            let rawKey = request.header("Idempotency-Key"),
            let guardian = services.sync?.idempotency
        else {
            return try handler(request)
        }
        let key = try IdempotencyGuard.validate(rawKey)
        let caller: String
        if request.header("Authorization") == nil {
            caller = "ip:" + request.http.remoteAddress
        } else {
            // `identify`, not `authenticate`: the handler authenticates (and counts the
            // per-user limit) itself, so a keyed request is counted once.
            switch try? services.authenticator.identify(request) {
            case .user(let id, _)?: caller = "u:" + id
            case .admin(let name)?: caller = "a:" + name
            case nil: return try handler(request)
            }
        }
        let fingerprint = IdempotencyGuard.fingerprint(
            method: request.http.method, path: request.http.path,
            body: request.http.body)
        switch try guardian.begin(caller: caller, key: key, fingerprint: fingerprint, now: request.now) {
        case .replay(let response):
            return response
        case .proceed(let claim):
            let response: HTTPResponse
            do {
                response = try handler(request)
            } catch {
                response = problem(for: error, request: request.http, route: request.route)
            }
            guardian.complete(
                caller: caller, key: key, fingerprint: fingerprint, claim: claim, response: response,
                path: request.http.path, now: request.now)
            return response
        }
    }
}
