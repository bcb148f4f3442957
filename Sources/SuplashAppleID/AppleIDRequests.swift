import SuplashCrypto
import SuplashHTTPClient
import SuplashJSON

/// `application/x-www-form-urlencoded` bodies (WHATWG URL Standard §5.2, "urlencoded
/// serializer"; the form OAuth 2.0 uses for token requests, RFC 6749 §4.1.3, appendix B).
public enum FormURLEncoding {
    /// `name=value` pairs joined by `&`, in order. Bytes of the UTF-8 form other than ASCII
    /// letters, digits and `*-._` are percent-encoded with upper-case hex; a space becomes `+`.
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(0x26) }
            append(name, to: &out)
            out.append(0x3D)
            append(value, to: &out)
        }
        return out
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func append(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2A, 0x2D, 0x2E, 0x5F:
                out.append(byte)
            case 0x20:
                out.append(0x2B)
            default:
                out += [0x25, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
    }
}

/// Requests to Sign in with Apple's REST API (Apple, "Generate and validate tokens", "Revoke
/// tokens"). Pure: the caller sends them with `HTTPClient` and classifies the answer with
/// `AppleIDResponseClassifier`.
public enum AppleIDRequestBuilder {
    /// Apple's token endpoint (configurable as `apple.tokenURL`, e.g. for a mock).
    public static let defaultTokenURL = "https://appleid.apple.com/auth/token"
    /// Apple's revoke endpoint (configurable as `apple.revokeURL`).
    public static let defaultRevokeURL = "https://appleid.apple.com/auth/revoke"

    /// The authorization-code exchange: `POST tokenURL` with the form
    /// `client_id, client_secret, code, grant_type=authorization_code[, redirect_uri]`.
    /// - Parameters:
    ///   - tokenURL: the token endpoint (`https`).
    ///   - clientID: the identity token's audience (bundle id or Services ID).
    ///   - clientSecret: from `AppleClientSecretIssuer.secret(clientID:)`.
    ///   - code: the app's `authorizationCode` (single use, valid 5 minutes).
    ///   - redirectURI: only for web sign-in, the URI the code was sent to.
    public static func tokenRequest(
        tokenURL: String = defaultTokenURL, clientID: String, clientSecret: String, code: String,
        redirectURI: String? = nil
    ) -> HTTPClientRequest {
        var fields = [("client_id", clientID), ("client_secret", clientSecret), ("code", code), ("grant_type", "authorization_code")]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return post(tokenURL, fields)
    }

    /// Revocation of a refresh token: `POST revokeURL` with the form
    /// `client_id, client_secret, token, token_type_hint=refresh_token`.
    /// - Parameters:
    ///   - revokeURL: the revoke endpoint (`https`).
    ///   - clientID: the client id the token was issued to.
    ///   - clientSecret: from `AppleClientSecretIssuer.secret(clientID:)`.
    ///   - refreshToken: Apple's refresh token (opened from its sealed column just before sending).
    public static func revokeRequest(
        revokeURL: String = defaultRevokeURL, clientID: String, clientSecret: String,
        refreshToken: String
    ) -> HTTPClientRequest {
        post(
            revokeURL,
            [
                ("client_id", clientID), ("client_secret", clientSecret), ("token", refreshToken),
                ("token_type_hint", "refresh_token"),
            ])
    }

    private static func post(_ url: String, _ fields: [(String, String)]) -> HTTPClientRequest {
        HTTPClientRequest(
            method: "POST", url: url,
            headers: [
                HTTPClientHeader("content-type", "application/x-www-form-urlencoded"),
                HTTPClientHeader("accept", "application/json"),
            ],
            body: FormURLEncoding.encode(fields))
    }
}

/// The parts of a successful token response (Apple's `TokenResponse`) the server keeps.
public struct AppleTokenResponse: Sendable, Hashable {
    /// Apple's refresh token, kept sealed to revoke at account deletion; nil if Apple sent none.
    public var refreshToken: String?
    /// The identity token Apple returned (its `sub` must match the signed-in Apple user).
    public var idToken: String?

    /// Creates a response.
    public init(refreshToken: String?, idToken: String?) {
        self.refreshToken = refreshToken
        self.idToken = idToken
    }

    /// Parses a 200 body `{"access_token", "token_type", "expires_in", "refresh_token", "id_token"}`;
    /// nil when it is not a JSON object or `refresh_token` / `id_token` are present but not
    /// non-empty strings. The access token is ignored (the server calls no other Apple API).
    public init?(body: [UInt8]) {
        guard let value = try? JSONParser.parse(body, maxDepth: 4), case .object = value else { return nil }
        func optionalString(_ name: String) -> String?? {
            guard let member = value[name], !member.isNull else { return .some(nil) }
            guard let text = member.stringValue, !text.isEmpty else { return nil }
            return .some(text)
        }
        guard let refresh = optionalString("refresh_token"), let id = optionalString("id_token") else { return nil }
        self.init(refreshToken: refresh, idToken: id)
    }

    /// The `sub` claim of `idToken` — the Apple user the authorization code was issued to — or
    /// nil when there is no identity token, it is not a compact JWS or has no string `sub`.
    /// Read without checking the signature: the token came straight from Apple's token endpoint
    /// over TLS (OpenID Connect Core 1.0 §3.1.3.7, item 6).
    public var idTokenSubject: String? {
        guard let idToken else { return nil }
        let parts = idToken.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(bytes: parts[1]),
            let claims = try? JSONParser.parse(payload, maxDepth: 8), case .object = claims
        else { return nil }
        return claims["sub"]?.stringValue
    }
}
