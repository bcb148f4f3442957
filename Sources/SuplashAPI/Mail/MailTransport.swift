import Foundation
import SuplashDomain
import SuplashHTTPClient
import SuplashJSON

/// Why a delivery attempt failed. `kind` is a fixed word (`network`, `timeout`, `http_503`,
/// `io`), never provider text, so it can be logged and stored.
public enum MailDeliveryError: Error, Sendable, Equatable {
    /// Worth retrying later (network, timeout, 408, 409, 429, 5xx, file-system hiccup).
    case temporary(kind: String)
    /// Retrying cannot help (other 4xx: bad key, bad sender); the message is abandoned.
    case permanent(kind: String)
}

/// Delivers one outbox message. Called only from the single delivery worker thread; a
/// message may be handed over again after a crash, so transports must be idempotent by
/// `message.id` (Resend: `Idempotency-Key`; file: the file name).
public protocol MailTransport: Sendable {
    /// Delivers `message` (the transport knows the sender mailbox, `mail.from`).
    /// - Throws: `MailDeliveryError`.
    func deliver(_ message: OutboxMessage) throws(MailDeliveryError)
}

/// The Resend HTTP API: `POST {baseURL}/emails` with `Authorization: Bearer {apiKey}`,
/// `Idempotency-Key: {message id}` and JSON `{from, to: [recipient], subject, text}`.
/// Sent with the project's libcurl client (`BlockingExchange`: HTTP/2 when the server offers
/// it over TLS, else HTTP/1.1; `http` accepted for a local sink) on the delivery worker's
/// thread: `timeoutSeconds` to connect, twice that for the whole exchange.
public struct ResendTransport: MailTransport {
    let endpoint: String
    let apiKey: String
    let from: String
    let configuration: HTTPClientConfiguration

    /// - Parameters:
    ///   - baseURL: e.g. `https://api.resend.com` (a trailing `/` is fine).
    ///   - timeoutSeconds: to connect (default 10); the whole exchange may take twice as long.
    /// - Returns: nil when `baseURL` is not an http(s) URL.
    public init?(baseURL: String, apiKey: String, from: String, timeoutSeconds: Double = 10) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + "/emails"), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http", url.host != nil
        else { return nil }
        self.endpoint = url.absoluteString
        self.apiKey = apiKey
        self.from = from
        self.configuration = HTTPClientConfiguration(
            connectTimeout: .seconds(timeoutSeconds), requestTimeout: .seconds(timeoutSeconds * 2),
            maxResponseBodyBytes: 1 << 20, requiresHTTP2: false, allowsCleartext: true)
    }

    /// One `POST {url}/emails`; 2xx delivers, 408/409/425/429/5xx and network errors are temporary, other statuses permanent.
    public func deliver(_ message: OutboxMessage) throws(MailDeliveryError) {
        let body: JSONValue = .object([
            ("from", .string(from)), ("to", .array([.string(message.recipient)])),
            ("subject", .string(message.subject)), ("text", .string(message.text)),
        ])
        let request = HTTPClientRequest(
            method: "POST", url: endpoint,
            headers: [
                HTTPClientHeader("Authorization", "Bearer " + apiKey),
                HTTPClientHeader("Content-Type", "application/json"),
                HTTPClientHeader("Idempotency-Key", message.id),
                HTTPClientHeader("User-Agent", "suplash-sync"),
            ],
            body: body.serialized())
        switch HTTPCall.perform(request, configuration: configuration) {
        case .failure(let kind):
            throw .temporary(kind: kind)
        case .success(let code, _):
            switch code {
            case 200..<300: return
            case 408, 409, 425, 429, 500...599: throw .temporary(kind: "http_\(code)")
            default: throw .permanent(kind: "http_\(code)")
            }
        }
    }
}

/// A blocking HTTP exchange over the libcurl client for worker threads (never event loops).
enum HTTPCall {
    enum Outcome: Sendable, Equatable {
        case success(status: Int, body: [UInt8])
        /// `timeout` when the deadline passed, `network` for every other failure (a fixed
        /// word, never provider text).
        case failure(kind: String)
    }

    /// Runs `request`; `configuration` bounds the connection and the whole exchange.
    static func perform(_ request: HTTPClientRequest, configuration: HTTPClientConfiguration) -> Outcome {
        outcome(BlockingExchange.perform(request, configuration: configuration))
    }

    /// The outcome of a finished exchange.
    static func outcome(_ result: Result<HTTPClientResponse, HTTPClientError>) -> Outcome {
        switch result {
        case .success(let response): return .success(status: response.status, body: response.body)
        case .failure(.timedOut): return .failure(kind: "timeout")
        case .failure: return .failure(kind: "network")
        }
    }
}

/// Development transport: one RFC 5322 `.eml` file per message, `<directory>/<message id>.eml`,
/// mode 0600 in a 0700 directory. Written to a temporary name and renamed, so a message
/// handed over twice is still one file.
public struct FileMailTransport: MailTransport {
    /// The folder holding the `.eml` files (`<dataDir>/mail`).
    public let directory: String
    let from: String

    /// - Parameters:
    ///   - directory: the folder for `.eml` files (created with mode 0700 when missing).
    ///   - from: the `From:` mailbox.
    public init(directory: String, from: String) {
        self.directory = directory
        self.from = from
    }

    /// Writes `<directory>/<id>.eml` (temporary file, fsync, rename); I/O errors are temporary.
    public func deliver(_ message: OutboxMessage) throws(MailDeliveryError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw .temporary(kind: "io")
        }
        let safeID = String(
            message.id.unicodeScalars.filter {
                CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_"
            })
        guard !safeID.isEmpty else { throw .permanent(kind: "bad_id") }
        let path = directory + "/" + safeID + ".eml"
        let temporary = path + ".tmp"
        let bytes = Array(Self.render(message, from: from).utf8)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .temporary(kind: "io") }
        fchmod(fd, 0o600)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .temporary(kind: "io")
        }
    }

    /// The message as RFC 5322 text with CRLF line ends; a non-ASCII subject is an RFC 2047
    /// encoded word; the body is UTF-8 (`Content-Transfer-Encoding: 8bit`).
    public static func render(_ message: OutboxMessage, from: String) -> String {
        let subject =
            message.subject.unicodeScalars.allSatisfy({ $0.isASCII })
            ? message.subject
            : "=?UTF-8?B?" + Data(message.subject.utf8).base64EncodedString() + "?="
        let headers = [
            "Message-ID: <\(message.id)@suplash>",
            "Date: \(rfc5322Date(unixMilliseconds: message.createdAt))",
            "From: \(from)",
            "To: \(message.recipient)",
            "Subject: \(subject)",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
        ]
        let body = message.text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n")
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + body + "\r\n"
    }

    /// The RFC 5322 §3.3 `date-time` of a Unix instant in UTC, e.g. `Tue, 01 Dec 2026 05:33:15 +0000`
    /// (English day and month names, proleptic Gregorian calendar, milliseconds dropped toward
    /// the past). Computed by integer arithmetic (days to civil date), not `DateFormatter`, so
    /// writing a message touches none of ICU's formatting data.
    public static func rfc5322Date(unixMilliseconds: Int64) -> String {
        let seconds = unixMilliseconds >= 0 ? unixMilliseconds / 1000 : (unixMilliseconds - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Days since 1970-01-01 to year, month, day (the civil-from-days algorithm, 400-year eras).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153  // 0 = March
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        // 1970-01-01 was a Thursday.
        let weekday = Int(((days % 7) + 11) % 7)
        let names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var yearText = "\(year)"
        while yearText.utf8.count < 4 { yearText = "0" + yearText }
        return "\(names[weekday]), \(two(day)) \(months[Int(month) - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) +0000"
    }
}
