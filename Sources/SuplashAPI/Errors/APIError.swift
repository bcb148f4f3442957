import Foundation
import SuplashDomain
import SuplashHTTP
import SuplashJSON

/// The one error type of the API. It knows its HTTP status and stable `code`, and
/// `response(requestID:)` is the single place where errors become RFC 9457
/// `application/problem+json` (spec §2).
///
/// `title` and `detail` are fixed texts written here; they never echo user content.
public struct APIError: Error, Sendable {
    /// HTTP status (400–599).
    public var status: Int
    /// Stable machine code documented in the README (e.g. `validation_failed`).
    public var code: String
    /// A short fixed summary of the problem type.
    public var title: String
    /// A fixed explanation; names fields and limits only.
    public var detail: String?
    /// Per-field errors for 422 `validation_failed`.
    public var fieldErrors: [FieldError]
    /// Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`).
    public var headers: [(String, String)]

    public init(status: Int, code: String, title: String, detail: String? = nil,
                fieldErrors: [FieldError] = [], headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.headers = headers
    }

    // MARK: Catalogue (spec §2 status table)

    public static func badRequest(_ code: String, _ detail: String) -> APIError {
        APIError(status: 400, code: code, title: "Bad Request", detail: detail)
    }

    public static func malformedJSON() -> APIError {
        badRequest("malformed_json", "The body is not well-formed UTF-8 JSON (RFC 8259).")
    }

    public static func unauthorized(_ code: String = "unauthenticated",
                                    _ detail: String = "A valid bearer token is required.") -> APIError {
        APIError(status: 401, code: code, title: "Unauthorized", detail: detail,
                 headers: [("WWW-Authenticate", "Bearer realm=\"suplash\"")])
    }

    public static func invalidToken() -> APIError {
        APIError(status: 401, code: "invalid_token", title: "Unauthorized",
                 detail: "The bearer token is invalid, expired or revoked.",
                 headers: [("WWW-Authenticate", "Bearer realm=\"suplash\", error=\"invalid_token\"")])
    }

    public static let permissionDenied = APIError(status: 403, code: "permission_denied", title: "Forbidden",
                                                  detail: "This path belongs to another user.")
    public static let adminRequired = APIError(status: 403, code: "admin_required", title: "Forbidden",
                                               detail: "This route needs an admin API key.")
    public static let notFound = APIError(status: 404, code: "not_found", title: "Not Found",
                                          detail: "No such document.")
    public static let routeNotFound = APIError(status: 404, code: "route_not_found", title: "Not Found",
                                               detail: "No such route.")

    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(status: 405, code: "method_not_allowed", title: "Method Not Allowed",
                 detail: "Allowed methods: " + allowed.joined(separator: ", ") + ".",
                 headers: [("Allow", allowed.joined(separator: ", "))])
    }

    public static func conflict(_ code: String, _ detail: String) -> APIError {
        APIError(status: 409, code: code, title: "Conflict", detail: detail)
    }

    public static let preconditionFailed = APIError(status: 412, code: "precondition_failed", title: "Precondition Failed",
                                                    detail: "If-Match does not match the current ETag.")
    public static let unsupportedMediaType = APIError(status: 415, code: "unsupported_media_type",
                                                      title: "Unsupported Media Type",
                                                      detail: "Send the body as application/json.")

    public static func validation(_ errors: [FieldError]) -> APIError {
        APIError(status: 422, code: "validation_failed", title: "Validation Failed",
                 detail: "One or more fields are invalid; see errors.", fieldErrors: errors)
    }

    public static func unavailable(_ detail: String = "Storage is unavailable; retry later.") -> APIError {
        APIError(status: 503, code: "unavailable", title: "Service Unavailable", detail: detail,
                 headers: [("Retry-After", "1")])
    }

    /// The problem for a classified storage failure (spec §2): transient kinds (full, busy,
    /// I/O, shutdown, connection) → 503 `unavailable` with `Retry-After: 1`; permanent kinds
    /// (corrupt, read-only) → 503 `storage_failed` without `Retry-After` (retrying cannot help;
    /// an operator must act). `detail` names the kind with a fixed text.
    public static func storage(_ failure: StorageFailure) -> APIError {
        let detail: String = switch failure {
        case .full: "Storage is full; retry later."
        case .busy: "Storage is busy; retry later."
        case .io: "Storage had an I/O error; retry later."
        case .shutdown: "Storage is shutting down; retry later."
        case .connection: "The database connection failed; retry later."
        case .corrupt: "The database is damaged; an operator must restore it."
        case .readOnly: "The database cannot be written; an operator must make it writable."
        }
        guard failure.isPermanent else { return .unavailable(detail) }
        return APIError(status: 503, code: "storage_failed", title: "Service Unavailable", detail: detail)
    }

    /// `/readyz` while storage is unhealthy (spec §7): the code and `Retry-After` of
    /// `storage(_:)` for the kind, and a fixed `detail` naming the kind and who reported it,
    /// e.g. "Storage is not ready: full (the latest write probe failed)."
    public static func notReady(_ problem: StorageHealth.Problem) -> APIError {
        var error = storage(problem.failure)
        let kind = problem.failure == .readOnly ? "read_only" : problem.failure.rawValue
        error.detail = "Storage is not ready: \(kind) ("
            + (problem.fromWriteProbe ? "the latest write probe failed)." : "reported by a query).")
        return error
    }

    public static let internalError = APIError(status: 500, code: "internal_error", title: "Internal Server Error",
                                               detail: "The server failed; this is a bug.")

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
            case .emailTaken: self = .conflict("email_taken", "An account with this email already exists.")
            case .conflict(let code):
                switch code {
                case "entry_exists": self = .conflict(code, "An entry with this id exists with other content.")
                case "entry_deleted": self = .conflict(code, "An entry with this id was deleted.")
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
            ("type", .string("https://suplash.app/problems/" + code.replacingOccurrences(of: "_", with: "-"))),
            ("title", .string(title)),
            ("status", .number(JSONNumber(status))),
            ("code", .string(code)),
        ]
        if let detail { members.append(("detail", .string(detail))) }
        if !fieldErrors.isEmpty {
            members.append(("errors", .array(fieldErrors.map {
                .object([("pointer", .string($0.pointer)), ("code", .string($0.code.rawValue)),
                         ("message", .string($0.message))])
            })))
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
    /// The problem for an error the HTTP engine answers itself (framing 400, 408, 413,
    /// 414, 431, 501, 503 while draining) — so engine errors use the same mapping.
    public static func engineResponse(_ error: HTTPEngineError) -> HTTPResponse {
        APIError(status: error.status, code: error.code, title: error.title).response()
    }
}
