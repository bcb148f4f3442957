import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// The one error type of the API. It knows its HTTP status and stable `code`, and
/// `response(requestID:)` is the single place where errors become RFC 9457
/// `application/problem+json` (spec §2).
///
/// Status, title and `type` come from `ProblemRegistry`, the one list of every code the
/// server can emit. `detail` is a fixed text written at the throw site; it never echoes
/// user content.
public struct APIError: Error, Sendable {
    /// HTTP status (400–599), from the registry entry of `code`.
    public var status: Int
    /// Stable machine code listed in `ProblemRegistry` and `docs/errors.md` (e.g. `validation_failed`).
    public var code: String
    /// A short fixed summary of the problem type, from the registry entry of `code`.
    public var title: String
    /// A fixed explanation; names fields and limits only.
    public var detail: String?
    /// Per-field errors for 422 `validation_failed`.
    public var fieldErrors: [FieldError]
    /// Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`).
    public var headers: [(String, String)]

    /// The problem of registry entry `problem`: its status and title, with this `detail`.
    public init(
        _ problem: ProblemCode, detail: String? = nil,
        fieldErrors: [FieldError] = [], headers: [(String, String)] = []
    ) {
        self.status = problem.status
        self.code = problem.code
        self.title = problem.title
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.headers = headers
    }

    /// The problem for a code given as text. When the registry lists `code` (it must: a
    /// test scans `Sources/` for code literals), status and title come from the registry
    /// and the given ones are ignored; prefer `init(_:detail:fieldErrors:headers:)`.
    public init(
        status: Int, code: String, title: String, detail: String? = nil,
        fieldErrors: [FieldError] = [], headers: [(String, String)] = []
    ) {
        let entry = ProblemRegistry.entry(code)
        self.status = entry?.status ?? status
        self.code = code
        self.title = entry?.title ?? title
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.headers = headers
    }

    // MARK: Catalogue (spec §2 status table)

    /// 400 with registry code `code`.
    public static func badRequest(_ code: ProblemCode, _ detail: String) -> APIError {
        APIError(code, detail: detail)
    }

    /// 400 with a code given as text (kept for callers that name codes as strings).
    public static func badRequest(_ code: String, _ detail: String) -> APIError {
        APIError(status: 400, code: code, title: "Bad Request", detail: detail)
    }

    public static func malformedJSON() -> APIError {
        badRequest(.malformedJSON, "The body is not well-formed UTF-8 JSON (RFC 8259).")
    }

    /// 401 with `WWW-Authenticate: Bearer realm="suplash"`.
    public static func unauthorized(
        _ code: ProblemCode = .unauthenticated,
        _ detail: String = "A valid bearer token is required."
    ) -> APIError {
        APIError(code, detail: detail, headers: [("WWW-Authenticate", "Bearer realm=\"suplash\"")])
    }

    public static func invalidToken() -> APIError {
        APIError(
            .invalidToken, detail: "The bearer token is invalid, expired or revoked.",
            headers: [("WWW-Authenticate", "Bearer realm=\"suplash\", error=\"invalid_token\"")])
    }

    public static let permissionDenied = APIError(.permissionDenied, detail: "This path belongs to another user.")
    public static let adminRequired = APIError(.adminRequired, detail: "This route needs an admin API key.")
    public static let notFound = APIError(.notFound, detail: "No such document.")
    public static let routeNotFound = APIError(.routeNotFound, detail: "No such route.")

    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(
            .methodNotAllowed, detail: "Allowed methods: " + allowed.joined(separator: ", ") + ".",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// 409 with registry code `code`.
    public static func conflict(_ code: ProblemCode, _ detail: String) -> APIError {
        APIError(code, detail: detail)
    }

    /// 409 with a code given as text (a domain `RepositoryError.conflict` code).
    public static func conflict(_ code: String, _ detail: String) -> APIError {
        APIError(status: 409, code: code, title: "Conflict", detail: detail)
    }

    public static let preconditionFailed = APIError(.preconditionFailed, detail: "If-Match does not match the current ETag.")
    public static let unsupportedMediaType = APIError(.unsupportedMediaType, detail: "Send the body as application/json.")

    public static func validation(_ errors: [FieldError]) -> APIError {
        APIError(.validationFailed, detail: "One or more fields are invalid; see errors.", fieldErrors: errors)
    }

    /// 503 `unavailable` with `Retry-After: 1` (a retry may help).
    public static func unavailable(_ detail: String = "Storage is unavailable; retry later.") -> APIError {
        APIError(.unavailable, detail: detail, headers: [("Retry-After", "1")])
    }

    /// The problem for a classified storage failure (spec §2): transient kinds (full, busy,
    /// I/O, shutdown, connection) → 503 `unavailable` with `Retry-After: 1`; permanent kinds
    /// (corrupt, read-only) → 503 `storage_failed` without `Retry-After` (retrying cannot help;
    /// an operator must act). `detail` names the kind with a fixed text.
    public static func storage(_ failure: StorageFailure) -> APIError {
        let detail: String =
            switch failure {
            case .full: "Storage is full; retry later."
            case .busy: "Storage is busy; retry later."
            case .io: "Storage had an I/O error; retry later."
            case .shutdown: "Storage is shutting down; retry later."
            case .connection: "The database connection failed; retry later."
            case .corrupt: "The database is damaged; an operator must restore it."
            case .readOnly: "The database cannot be written; an operator must make it writable."
            }
        guard failure.isPermanent else { return .unavailable(detail) }
        return APIError(.storageFailed, detail: detail)
    }

    /// `/readyz` while storage is unhealthy (spec §7): the code and `Retry-After` of
    /// `storage(_:)` for the kind, and a fixed `detail` naming the kind and who reported it,
    /// e.g. "Storage is not ready: full (the latest write probe failed)."
    public static func notReady(_ problem: StorageHealth.Problem) -> APIError {
        var error = storage(problem.failure)
        let kind = problem.failure == .readOnly ? "read_only" : problem.failure.rawValue
        error.detail =
            "Storage is not ready: \(kind) ("
            + (problem.stalled
                ? "a write probe has not returned)."
                : problem.fromWriteProbe ? "the latest write probe failed)." : "reported by a query).")
        return error
    }

    public static let internalError = APIError(.internalError, detail: "The server failed; this is a bug.")

    /// Maps any error thrown by a handler to its problem (the single mapping point).
    public init(_ error: any Error) {
        switch error {
        case let e as APIError:
            self = e
        case let e as ValidationFailure:
            self = .validation(e.errors)
        case is JSONParseError:
            self = .malformedJSON()
        case let e as RepositoryError:
            switch e {
            case .notFound: self = .notFound
            case .emailTaken: self = .conflict(.emailTaken, "An account with this email already exists.")
            case .conflict(let code):
                switch code {
                case "entry_exists": self = .conflict(code, "An entry with this id exists with other content.")
                case "entry_deleted": self = .conflict(code, "An entry with this id was deleted.")
                case "reminder_entry_deleted":
                    self = .conflict(.reminderEntryDeleted, "The entry this reminder logged was deleted.")
                case "reminder_not_hydration":
                    self = .conflict(.reminderNotHydration, "Only a hydration reminder can be drunk or snoozed.")
                case "health_kit_uuid_exists": self = .conflict(code, "Another entry holds this healthKitUUID.")
                default: self = .conflict(code, "The write conflicts with a stored document.")
                }
            case .preconditionFailed: self = .preconditionFailed
            case .unavailable: self = .unavailable()
            case .storage(let failure): self = .storage(failure)
            }
        default:
            self = .internalError
        }
    }

    /// The RFC 9457 problem document:
    /// `{"type","title","status","code","detail","errors":[{"pointer","code","message"}]}`.
    public var problem: JSONValue {
        var members: [(String, JSONValue)] = [
            (
                "type",
                .string(
                    ProblemRegistry.entry(code)?.type
                        ?? ProblemRegistry.typeBase + code.replacingOccurrences(of: "_", with: "-"))
            ),
            ("title", .string(title)),
            ("status", .number(JSONNumber(status))),
            ("code", .string(code)),
        ]
        if let detail { members.append(("detail", .string(detail))) }
        if !fieldErrors.isEmpty {
            members.append(
                (
                    "errors",
                    .array(
                        fieldErrors.map {
                            .object([
                                ("pointer", .string($0.pointer)), ("code", .string($0.code.rawValue)),
                                ("message", .string($0.message)),
                            ])
                        })
                ))
        }
        return .object(members)
    }

    /// The HTTP response carrying `problem`.
    public func response() -> HTTPResponse {
        var response = HTTPResponse(status: status, body: problem.serialized())
        response.headers.add(name: "Content-Type", value: "application/problem+json")
        for (name, value) in headers { response.headers.add(name: name, value: value) }
        return response
    }
}

extension APIError {
    /// The problem for an error the HTTP engine answers itself (framing 400 `bad_request`,
    /// 408, 413, 414, 431, 501 `not_implemented`, 503 `unavailable` while draining) — so
    /// engine errors use the same registry; the 503 carries `Retry-After: 1` (spec §2).
    public static func engineResponse(_ error: HTTPEngineError) -> HTTPResponse {
        var problem = APIError(status: error.status, code: error.code, title: error.title)
        if error == .shuttingDown {
            problem.detail = "The server is shutting down; retry on a new connection."
            problem.headers.append(("Retry-After", "1"))
        }
        return problem.response()
    }
}
