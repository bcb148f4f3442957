import SuplashDomain
import SuplashHTTP

/// One problem code of the registry: the stable `code` of an RFC 9457 problem document
/// and the `status`, `title` and `type` URI every problem with that code carries (spec §2).
///
/// Codes are snake_case ASCII (`^[a-z][a-z0-9_]*$`). `meaning` is the documentation text
/// of `docs/errors.md`; it never appears in a response.
public struct ProblemCode: Sendable, Hashable {
    /// Where a code appears: as the problem of an HTTP response, inside the `error` of one
    /// `POST /v1/sync` result (a 200 answer, spec §5), both, or only in the operations CLI.
    public enum Scope: String, Sendable, Hashable {
        /// The problem document of an HTTP error response.
        case response
        /// The `error` of a rejected mutation inside a `POST /v1/sync` 200 answer.
        case syncMutation
        /// Both of the above.
        case responseAndSyncMutation
        /// Not sent over HTTP: reported by the `suplash-server` CLI.
        case commandLine
    }

    /// The stable machine code, e.g. `"validation_failed"`.
    public let code: String
    /// The HTTP status of a response with this code (RFC 9110 §15); inside a sync result
    /// the status the same problem would have as a response.
    public let status: Int
    /// The RFC 9457 `title`: a short fixed summary of the problem type.
    public let title: String
    /// Where the code appears.
    public let scope: Scope
    /// When the server answers it (documentation only; never sent).
    public let meaning: String

    /// Creates an entry; only the registry makes them.
    init(_ code: String, _ status: Int, _ title: String, _ scope: Scope = .response, _ meaning: String) {
        self.code = code
        self.status = status
        self.title = title
        self.scope = scope
        self.meaning = meaning
    }

    /// The RFC 9457 `type` URI: `https://suplash.app/problems/` and the code with `_` as `-`,
    /// e.g. `https://suplash.app/problems/validation-failed`.
    public var type: String {
        ProblemRegistry.typeBase + String(code.map { $0 == "_" ? "-" : $0 })
    }
}

/// The one registry of every problem `code` the server can emit (spec §2: "every `code`
/// the server can emit, the HTTP engine's included, is listed"): `APIError` takes status,
/// title and type from it, `docs/errors.md` is generated from it
/// (`suplash-server problem-codes --markdown`), and tests check that `/openapi.json` lists
/// exactly these codes, that every code written in `Sources/` is here, and that every code
/// of the HTTP engine (`HTTPEngineError.problemCodes`) is here.
///
/// Adding a code: add a `static let` below, list it in `all`, then regenerate
/// `docs/errors.md` and add it to the `Problem.code` enum of `docs/openapi.json`.
public enum ProblemRegistry {
    /// The prefix of every problem `type` URI.
    public static let typeBase = "https://suplash.app/problems/"

    /// Every code, in documentation order (by status, then as listed).
    public static let all: [ProblemCode] = [
        // 400
        .malformedJSON, .malformedGzip, .badRequest, .invalidQuery, .invalidDate, .invalidRange,
        .invalidPageSize, .invalidPageToken, .invalidSyncToken, .invalidDeviceID, .deviceIDRequired,
        .invalidIdempotencyKey, .meRequiresUser, .refreshTokenRequired, .userTokenRequired,
        .invalidAuthorizationCode, .invalidAppleNotification,
        // 401
        .unauthenticated, .invalidToken, .invalidCredentials, .invalidRefreshToken, .refreshTokenReused,
        .invalidIdentityToken, .unverifiedAppleNotification,
        // 403
        .permissionDenied, .adminRequired, .userRequired,
        // 404
        .notFound, .routeNotFound, .unknownProvider, .noBills, .noTariffInEffect,
        // 405, 408
        .methodNotAllowed, .requestTimeout,
        // 409
        .emailTaken, .emailAlreadyVerified, .entryExists, .entryDeleted, .healthKitUUIDExists, .billExists,
        .billIDExists, .billDeleted, .idempotencyKeyInUse, .conflict, .adminKeyExists,
        .reminderEntryDeleted, .reminderNotHydration,
        // 410, 412, 413, 414, 415
        .syncTokenExpired, .syncHistoryChanged, .preconditionFailed, .payloadTooLarge, .uriTooLong,
        .unsupportedMediaType, .unsupportedContentEncoding,
        // 422
        .validationFailed, .deviceIDMismatch, .idempotencyKeyMismatch, .invalidCode, .codeExpired, .codeAttemptsExhausted,
        .clockSkew, .readOnlyCollection, .unknownCollection, .operationNotAllowed, .invalidMutation,
        // 429, 431
        .rateLimited, .codeResendTooSoon, .headerFieldsTooLarge,
        // 5xx
        .internalError, .notImplemented, .unavailable, .storageFailed,
    ]

    /// The per-field codes of `errors[]` in a 422 `validation_failed` (spec §2), with their meaning.
    public static let fieldCodes: [(code: FieldErrorCode, meaning: String)] = FieldErrorCode.allCases.map { code in
        let meaning =
            switch code {
            case .required: "A required field is missing (or `null` where a value is needed)."
            case .invalidType: "The JSON type is wrong (a string for a number, `2.5` for an integer, ...)."
            case .invalidFormat: "The value does not parse: not a UUID, RFC 3339 timestamp, date, email, time zone, or enum value."
            case .outOfRange: "A number or date outside the field's range."
            case .tooLong: "A string longer than the field's limit (in characters) or an array with too many items."
            case .unknownField: "A member the document does not have (names are compared code point by code point)."
            case .readOnlyField: "A member the server computes (`id` in a PATCH, `createdAt`, `version`, ...)."
            }
        return (code, meaning)
    }

    private static let byCode: [[UInt8]: ProblemCode] = {
        var table: [[UInt8]: ProblemCode] = [:]
        for entry in all { table[Array(entry.code.utf8)] = entry }
        return table
    }()

    /// The entry for `code`, compared byte for byte (never with Unicode equivalence), or nil.
    public static func entry(_ code: String) -> ProblemCode? { byCode[Array(code.utf8)] }

    /// `docs/errors.md`: who the page is for, then one table per scope of every code.
    public static func markdown() -> String {
        var out = """
            For client developers and operators reading an error: every problem `code` the server answers, its status, and what it means.

            <!-- Generated from Sources/SuplashAPI/Errors/ProblemRegistry.swift by
                 `swift run suplash-server problem-codes --markdown > docs/errors.md`; do not edit by hand. -->

            # Errors

            Every error is `application/problem+json` (RFC 9457, spec §2):

            ```json
            {"type": "\(ProblemCode.validationFailed.type)", "title": "Validation Failed", "status": 422,
             "code": "validation_failed", "detail": "…",
             "errors": [{"pointer": "/amountMl", "code": "out_of_range", "message": "…"}]}
            ```

            `code` is stable; match on it, not on `title` or `detail`. `type` is `\(typeBase)` and the
            code with `_` written as `-`. `detail` and `message` never echo user content (no emails,
            notes, tokens) — only field names and limits. Every answer also carries `X-Request-ID`,
            which the server's log lines name. `/openapi.json` lists the same codes (`Problem.code`),
            and `suplash-server problem-codes` prints them as JSON.


            """
        func table(_ heading: String, _ entries: [ProblemCode]) {
            out += "## \(heading)\n\n| status | code | title | meaning and what to do |\n|---|---|---|---|\n"
            for e in entries.sorted(by: { ($0.status, $0.code) < ($1.status, $1.code) }) {
                out += "| \(e.status) | `\(e.code)` | \(e.title) | \(e.meaning) |\n"
            }
            out += "\n"
        }
        table("HTTP error responses", all.filter { $0.scope == .response || $0.scope == .responseAndSyncMutation })
        out += "## Per-field codes (`errors[].code` of `validation_failed`)\n\n| code | meaning |\n|---|---|\n"
        for (code, meaning) in fieldCodes { out += "| `\(code.rawValue)` | \(meaning) |\n" }
        out += "\n"
        table(
            "Per-mutation codes of `POST /v1/sync` (a rejected mutation's `error` inside the 200 answer; the other mutations are unaffected)",
            all.filter { $0.scope == .syncMutation || $0.scope == .responseAndSyncMutation })
        table("Command-line errors (never sent over HTTP; the command exits 64, a usage error)", all.filter { $0.scope == .commandLine })
        out += "The `suplash` CLI's exit codes are in [client.md](client.md#cli-reference).\n"
        return out
    }
}

/// The registry's entries, one constant per code (`ProblemCode.notFound` is `not_found`),
/// grouped by status; each `meaning` says when the server answers it.
extension ProblemCode {
    // MARK: 400 Bad Request
    public static let malformedJSON = ProblemCode(
        "malformed_json", 400, "Bad Request", .response,
        "The body is not valid JSON (RFC 8259: duplicate keys, depth over 64 and trailing data are refused too).")
    public static let malformedGzip = ProblemCode(
        "malformed_gzip", 400, "Bad Request", .response,
        "`Content-Encoding: gzip` but the body is not a valid gzip stream.")
    public static let badRequest = ProblemCode(
        "bad_request", 400, "Bad Request", .response,
        "The HTTP framing is broken (bad request line, header, chunk, `Content-Length`, "
            + "`Host`); the engine answers and closes the connection.")
    public static let invalidQuery = ProblemCode(
        "invalid_query", 400, "Bad Request", .response,
        "A query parameter is missing, malformed, out of range or given twice, or the query string is "
            + "not valid percent-encoding; `detail` names the parameter.")
    public static let invalidAuthorizationCode = ProblemCode(
        "invalid_authorization_code", 400, "Bad Request", .response,
        "Apple refused the Sign in with Apple `authorizationCode` (`invalid_grant`): it is invalid, expired (5 "
            + "minutes) or already used. Sign in with Apple again for a new code ([apple](apple.md)).")
    public static let invalidAppleNotification = ProblemCode(
        "invalid_apple_notification", 400, "Bad Request", .response,
        "`POST /v1/apple/notifications`: the body is not `{payload}` with a JWS, or its claims are malformed; "
            + "nothing was changed.")
    public static let invalidDate = ProblemCode(
        "invalid_date", 400, "Bad Request", .response,
        "A date parameter is not a calendar date `YYYY-MM-DD`.")
    public static let invalidRange = ProblemCode(
        "invalid_range", 400, "Bad Request", .response,
        "`stats`: `to` before `from`, or more than 366 buckets.")
    public static let invalidPageSize = ProblemCode(
        "invalid_page_size", 400, "Bad Request", .response,
        "`pageSize` is not an integer from 1 to 100.")
    public static let invalidPageToken = ProblemCode(
        "invalid_page_token", 400, "Bad Request", .response,
        "The page token is damaged or belongs to another query; start from the first page.")
    public static let invalidSyncToken = ProblemCode(
        "invalid_sync_token", 400, "Bad Request", .response,
        "The sync token is damaged or not one this server issued.")
    public static let invalidDeviceID = ProblemCode(
        "invalid_device_id", 400, "Bad Request", .response,
        "`X-Device-ID` (or the `{deviceId}` of `PUT …/devices/{deviceId}`) is not a UUID.")
    public static let deviceIDRequired = ProblemCode(
        "device_id_required", 400, "Bad Request", .response,
        "`POST /v1/sync` without `X-Device-ID`.")
    public static let invalidIdempotencyKey = ProblemCode(
        "invalid_idempotency_key", 400, "Bad Request", .response,
        "`Idempotency-Key` is not 1–255 visible ASCII characters.")
    public static let meRequiresUser = ProblemCode(
        "me_requires_user", 400, "Bad Request", .response,
        "`me` in a path with an admin key, which has no own user: name the uid.")
    public static let refreshTokenRequired = ProblemCode(
        "refresh_token_required", 400, "Bad Request", .response,
        "Logout with an admin key and no `refreshToken` in the body.")
    public static let userTokenRequired = ProblemCode(
        "user_token_required", 400, "Bad Request", .response,
        "An email-code route called with an admin key.")

    // MARK: 401 Unauthorized (with WWW-Authenticate)
    public static let unauthenticated = ProblemCode(
        "unauthenticated", 401, "Unauthorized", .response,
        "No usable credentials (`Authorization: Bearer …` missing or not a bearer token).")
    public static let invalidToken = ProblemCode(
        "invalid_token", 401, "Unauthorized", .response,
        "The access token or admin key is invalid, expired or revoked: refresh, or sign in again.")
    public static let invalidCredentials = ProblemCode(
        "invalid_credentials", 401, "Unauthorized", .response,
        "Wrong email or password — also when the account's failed-login budget is used up, or it has no password (made with Apple).")
    public static let invalidRefreshToken = ProblemCode(
        "invalid_refresh_token", 401, "Unauthorized", .response,
        "The refresh token is invalid, expired or revoked: sign in again.")
    public static let refreshTokenReused = ProblemCode(
        "refresh_token_reused", 401, "Unauthorized", .response,
        "A rotated refresh token was presented again: the whole token family is revoked; sign in again.")
    public static let invalidIdentityToken = ProblemCode(
        "invalid_identity_token", 401, "Unauthorized", .response,
        "The Apple identity token failed a check; `detail` names which ([Sign in with Apple](operations.md#sign-in-with-apple)).")

    public static let unverifiedAppleNotification = ProblemCode(
        "unverified_apple_notification", 401, "Unauthorized", .response,
        "`POST /v1/apple/notifications`: the payload's signature, issuer, audience or issue time is not Apple's "
            + "for this server; nothing was changed.")

    // MARK: 403 Forbidden
    public static let permissionDenied = ProblemCode(
        "permission_denied", 403, "Forbidden", .responseAndSyncMutation,
        "The path names another user's documents; in a sync push, a `profile` id that is not the caller's.")
    public static let adminRequired = ProblemCode(
        "admin_required", 403, "Forbidden", .response,
        "A user token on `/v1/admin/*`.")
    public static let userRequired = ProblemCode(
        "user_required", 403, "Forbidden", .response,
        "`/v1/sync` with an admin key (sync is per user).")

    // MARK: 404 Not Found
    public static let notFound = ProblemCode(
        "not_found", 404, "Not Found", .response,
        "No such document (also for a malformed document id).")
    public static let routeNotFound = ProblemCode(
        "route_not_found", 404, "Not Found", .response,
        "No such route.")
    public static let unknownProvider = ProblemCode(
        "unknown_provider", 404, "Not Found", .response,
        "`estimate`: no tariff is known for this provider.")
    public static let noBills = ProblemCode(
        "no_bills", 404, "Not Found", .response,
        "`estimate`: the subscription has no bills to average.")
    public static let noTariffInEffect = ProblemCode(
        "no_tariff_in_effect", 404, "Not Found", .response,
        "`estimate`: the provider has no tariff valid on the first day of the current month.")

    // MARK: 405, 408
    public static let methodNotAllowed = ProblemCode(
        "method_not_allowed", 405, "Method Not Allowed", .response,
        "The route exists, not for this method; `Allow` lists the ones that do.")
    public static let requestTimeout = ProblemCode(
        "request_timeout", 408, "Request Timeout", .response,
        "The request head (or a stalled body) did not arrive in time (`server.headerReadTimeoutSeconds`).")

    // MARK: 409 Conflict
    public static let emailTaken = ProblemCode(
        "email_taken", 409, "Conflict", .response,
        "Another account holds this email (also: Apple sign-in whose email Apple does not vouch for).")
    public static let emailAlreadyVerified = ProblemCode(
        "email_already_verified", 409, "Conflict", .response,
        "`/email/resend` for an already verified address.")
    public static let entryExists = ProblemCode(
        "entry_exists", 409, "Conflict", .response,
        "A client-chosen entry id already holds a different entry.")
    public static let entryDeleted = ProblemCode(
        "entry_deleted", 409, "Conflict", .response,
        "The client-chosen entry id belongs to a deleted entry.")
    public static let reminderEntryDeleted = ProblemCode(
        "reminder_entry_deleted", 409, "Conflict", .response,
        "`POST …/reminders/{reminderId}:drink` on a reminder whose entry (the reminder id is its id) was deleted.")
    public static let reminderNotHydration = ProblemCode(
        "reminder_not_hydration", 409, "Conflict", .response,
        "`:drink` or `:snooze` on a bill or campaign reminder.")
    public static let healthKitUUIDExists = ProblemCode(
        "health_kit_uuid_exists", 409, "Conflict", .responseAndSyncMutation,
        "A PATCH would move an entry onto another live entry's `healthKitUUID`; in a sync "
            + "push, another live entry holds the HealthKit sample.")
    public static let billExists = ProblemCode(
        "bill_exists", 409, "Conflict", .responseAndSyncMutation,
        "A live bill already exists for this (provider, subscriber number, period); in a sync push, another live bill holds that slot.")
    public static let billIDExists = ProblemCode(
        "bill_id_exists", 409, "Conflict", .response,
        "A client-chosen bill id already holds a different bill.")
    public static let billDeleted = ProblemCode(
        "bill_deleted", 409, "Conflict", .response,
        "The client-chosen bill id belongs to a deleted bill.")
    public static let idempotencyKeyInUse = ProblemCode(
        "idempotency_key_in_use", 409, "Conflict", .response,
        "A request with this `Idempotency-Key` is still running: retry shortly.")
    public static let conflict = ProblemCode(
        "conflict", 409, "Conflict", .responseAndSyncMutation,
        "Any other uniqueness conflict found at commit time (a race); retrying usually succeeds.")
    public static let adminKeyExists = ProblemCode(
        "admin_key_exists", 409, "Conflict", .commandLine,
        "`admin-key create --name` with a name in use.")

    // MARK: 410, 412, 413, 414, 415
    public static let syncTokenExpired = ProblemCode(
        "sync_token_expired", 410, "Gone", .response,
        "The sync token is older than the tombstone purge horizon: drop it and pull a full snapshot ([sync](sync.md)).")
    public static let syncHistoryChanged = ProblemCode(
        "sync_history_changed", 410, "Gone", .response,
        "The sync token is from another database, or ahead of this database's history (a restore): keep "
            + "local data, read a full snapshot, push back what it lacks.")
    public static let preconditionFailed = ProblemCode(
        "precondition_failed", 412, "Precondition Failed", .response,
        "`If-Match` does not match the current ETag: re-read, re-apply, retry.")
    public static let payloadTooLarge = ProblemCode(
        "payload_too_large", 413, "Content Too Large", .response,
        "The body (or its inflated gzip) is over the route's limit (1 MiB; 4 MiB for batch and sync routes).")
    public static let uriTooLong = ProblemCode(
        "uri_too_long", 414, "URI Too Long", .response,
        "The request line is over 8 KiB.")
    public static let unsupportedMediaType = ProblemCode(
        "unsupported_media_type", 415, "Unsupported Media Type", .response,
        "A body that is not `application/json`.")
    public static let unsupportedContentEncoding = ProblemCode(
        "unsupported_content_encoding", 415, "Unsupported Media Type", .response,
        "`Content-Encoding` other than `gzip` or `identity`.")

    // MARK: 422 Unprocessable Content
    public static let validationFailed = ProblemCode(
        "validation_failed", 422, "Validation Failed", .responseAndSyncMutation,
        "Well-formed JSON that fails validation; `errors[]` lists every bad field: `pointer` (RFC 6901) and a "
            + "per-field `code` (below). Field names are compared code point by code point.")
    public static let deviceIDMismatch = ProblemCode(
        "device_id_mismatch", 422, "Unprocessable Content", .response,
        "`PUT …/devices/{deviceId}` with an `X-Device-ID` naming another device: a device registers itself.")
    public static let idempotencyKeyMismatch = ProblemCode(
        "idempotency_key_mismatch", 422, "Unprocessable Content", .response,
        "The same `Idempotency-Key` was sent with a different request.")
    public static let invalidCode = ProblemCode(
        "invalid_code", 422, "Unprocessable Content", .response,
        "The emailed code is wrong (`/email/verify`: attempts left in `detail`); `/password/reset` answers every failure with it.")
    public static let codeExpired = ProblemCode(
        "code_expired", 422, "Unprocessable Content", .response,
        "The emailed code is older than 10 minutes: ask for a new one.")
    public static let codeAttemptsExhausted = ProblemCode(
        "code_attempts_exhausted", 422, "Unprocessable Content", .response,
        "Five wrong attempts: ask for a new code.")
    public static let clockSkew = ProblemCode(
        "clock_skew", 422, "Clock Skew", .syncMutation,
        "`clientUpdatedAt` is more than 5 minutes ahead of the server clock.")
    public static let readOnlyCollection = ProblemCode(
        "read_only_collection", 422, "Read-only Collection", .syncMutation,
        "A push to a computed collection (`achievements`).")
    public static let unknownCollection = ProblemCode(
        "unknown_collection", 422, "Unknown Collection", .syncMutation,
        "A push to a collection the server does not have.")
    public static let operationNotAllowed = ProblemCode(
        "operation_not_allowed", 422, "Operation Not Allowed", .syncMutation,
        "Deleting the profile through sync (use `DELETE /v1/users/{uid}`).")
    public static let invalidMutation = ProblemCode(
        "invalid_mutation", 422, "Rejected", .syncMutation,
        "A mutation whose write does not fit its collection.")

    // MARK: 429, 431
    public static let rateLimited = ProblemCode(
        "rate_limited", 429, "Too Many Requests", .response,
        "A rate limit is used up; wait `Retry-After` seconds (`RateLimit-Policy` / `RateLimit` say which budget).")
    public static let codeResendTooSoon = ProblemCode(
        "code_resend_too_soon", 429, "Too Many Requests", .response,
        "A new code within a minute of the last one; wait `Retry-After`.")
    public static let headerFieldsTooLarge = ProblemCode(
        "header_fields_too_large", 431, "Request Header Fields Too Large", .response,
        "The header section is over 16 KiB.")

    // MARK: 5xx
    public static let internalError = ProblemCode(
        "internal_error", 500, "Internal Server Error", .response,
        "A bug; the log line with the same request id names the error type.")
    public static let notImplemented = ProblemCode(
        "not_implemented", 501, "Not Implemented", .response,
        "A `Transfer-Encoding` other than `chunked` (the engine answers).")
    public static let unavailable = ProblemCode(
        "unavailable", 503, "Service Unavailable", .response,
        "Shutting down (the engine, while draining after SIGTERM: retry on another instance), overloaded, storage not ready, busy or "
            + "full, a feature not configured, or Apple's keys cannot be fetched; retry after `Retry-After`.")
    public static let storageFailed = ProblemCode(
        "storage_failed", 503, "Service Unavailable", .response,
        "The database is corrupt or read-only: an operator must act (no `Retry-After`).")
}
