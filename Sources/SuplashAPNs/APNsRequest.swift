import Foundation
import SuplashHTTPClient

/// The kind of push, sent as `apns-push-type` (Apple, "Sending notification requests to APNs").
public enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    /// A visible notification (alert, sound, badge). Priority 10.
    case alert
    /// A silent `content-available: 1` push that wakes the app. Priority 5 (Apple requires it).
    case background
    /// A PushKit push for a ClockKit complication; topic `<bundle id>.complication`. Priority 10.
    case complication
    /// A WidgetKit reload push; topic `<bundle id>.push-type.widgets`. Priority 5.
    case widgets

    /// The `apns-topic` for this push type and app: the bundle id, `.complication` appended for
    /// complication pushes, `.push-type.widgets` for widget pushes.
    public func topic(bundleID: String) -> String {
        switch self {
        case .alert, .background: return bundleID
        case .complication: return bundleID + ".complication"
        case .widgets: return bundleID + ".push-type.widgets"
        }
    }

    /// The `apns-priority`: 10 (deliver now) for alerts and complications, 5 (as power allows)
    /// for background and widget pushes.
    public var priority: Int {
        switch self {
        case .alert, .complication: return 10
        case .background, .widgets: return 5
        }
    }
}

/// Which APNs service a device token belongs to (a development build registers with the
/// sandbox, App Store and TestFlight builds with production).
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    /// `api.push.apple.com`.
    case production
    /// `api.sandbox.push.apple.com`.
    case sandbox

    /// The other environment (for the `BadDeviceToken` retry).
    public var other: APNsEnvironment { self == .production ? .sandbox : .production }
}

/// One notification to send: our push id, the device token, what kind of push, for which app
/// and environment, the JSON payload, and the delivery options.
public struct APNsPush: Sendable, Hashable {
    /// Our push id, sent as `apns-id` (so Apple's answers and our records share it).
    public var id: UUID
    /// The device token as hex (APNs, PushKit or WidgetKit token; 16–200 hex digits, even count).
    public var deviceToken: String
    /// The push type (`apns-push-type`, topic suffix and priority follow from it).
    public var pushType: APNsPushType
    /// The app's bundle id (the `apns-topic` before its push-type suffix).
    public var bundleID: String
    /// The environment the device registered for.
    public var environment: APNsEnvironment
    /// The JSON payload with its `aps` dictionary, at most `APNsRequestBuilder.maxPayloadBytes`.
    public var payload: [UInt8]
    /// `apns-expiration`: Unix seconds after which Apple stops trying; 0 = try once, nil = omit
    /// (Apple then stores the notification for a while).
    public var expiration: Int64?
    /// `apns-collapse-id` (at most 64 bytes): a newer push with the same id replaces the older.
    public var collapseID: String?
    /// When the device registered this token, Unix milliseconds: an `Unregistered` answer
    /// older than this does not drop the token.
    public var tokenRegisteredAt: Int64?

    /// Creates a push.
    public init(
        id: UUID, deviceToken: String, pushType: APNsPushType, bundleID: String, environment: APNsEnvironment,
        payload: [UInt8], expiration: Int64? = nil, collapseID: String? = nil, tokenRegisteredAt: Int64? = nil
    ) {
        self.id = id
        self.deviceToken = deviceToken
        self.pushType = pushType
        self.bundleID = bundleID
        self.environment = environment
        self.payload = payload
        self.expiration = expiration
        self.collapseID = collapseID
        self.tokenRegisteredAt = tokenRegisteredAt
    }
}

/// Why a push cannot be turned into a request (nothing is sent).
public enum APNsRequestError: Error, Sendable, Hashable {
    /// The device token is not 16–200 hex digits of even count.
    case invalidDeviceToken
    /// The payload exceeds `APNsRequestBuilder.maxPayloadBytes`.
    case payloadTooLarge
    /// The collapse id is empty or longer than 64 bytes.
    case invalidCollapseID
    /// The bundle id is empty or has characters outside `[A-Za-z0-9.-]`.
    case invalidBundleID
}

/// Builds APNs HTTP/2 requests: `POST <origin>/3/device/<hex token>` with the headers of
/// Apple's "Sending notification requests to APNs".
public enum APNsRequestBuilder {
    /// Largest payload for these push types, bytes (Apple: 4 KB; VoIP's 5 KB is not used).
    public static let maxPayloadBytes = 4096
    /// Largest `apns-collapse-id`, bytes.
    public static let maxCollapseIDBytes = 64

    /// The request for `push` at `origin` (e.g. `https://api.push.apple.com`, no trailing
    /// slash) with `authorization: bearer <provider token>`.
    ///
    /// Headers: `authorization`, `apns-push-type`, `apns-topic` (bundle id + push-type
    /// suffix), `apns-priority` (10 or 5 by type), `apns-id` (the push id, lower-case UUID),
    /// `apns-expiration` and `apns-collapse-id` when set, `content-type: application/json`.
    /// - Throws: `APNsRequestError` (nothing is sent).
    public static func request(
        for push: APNsPush, origin: String, providerToken: String,
        timeout: Duration? = nil
    ) throws(APNsRequestError) -> HTTPClientRequest {
        let token = push.deviceToken.lowercased()
        guard (16...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
            token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw .invalidDeviceToken
        }
        guard push.payload.count <= maxPayloadBytes else { throw .payloadTooLarge }
        guard !push.bundleID.isEmpty,
            push.bundleID.utf8.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x2D
            })
        else { throw .invalidBundleID }
        var headers = [
            HTTPClientHeader("authorization", "bearer " + providerToken),
            HTTPClientHeader("apns-push-type", push.pushType.rawValue),
            HTTPClientHeader("apns-topic", push.pushType.topic(bundleID: push.bundleID)),
            HTTPClientHeader("apns-priority", String(push.pushType.priority)),
            HTTPClientHeader("apns-id", push.id.uuidString.lowercased()),
            HTTPClientHeader("content-type", "application/json"),
        ]
        if let expiration = push.expiration { headers.append(HTTPClientHeader("apns-expiration", String(max(0, expiration)))) }
        if let collapseID = push.collapseID {
            guard !collapseID.isEmpty, collapseID.utf8.count <= maxCollapseIDBytes,
                !collapseID.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
            else { throw .invalidCollapseID }
            headers.append(HTTPClientHeader("apns-collapse-id", collapseID))
        }
        return HTTPClientRequest(
            method: "POST", url: origin + "/3/device/" + token, headers: headers,
            body: push.payload, timeout: timeout)
    }
}
