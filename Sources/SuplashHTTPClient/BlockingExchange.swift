import CCurl

/// One outbound exchange run to completion on the calling thread with libcurl's easy
/// interface (`curl_easy_perform`, libcurl-easy(3)): no client thread, no connection kept
/// between calls. For rare calls made from worker threads — a mail delivery, a download of
/// Apple's key set — never from an event loop, which must not block.
///
/// Each call opens its own connection (TCP, TLS when `https`) and closes it afterwards.
/// `configuration.requestTimeout` (or `request.timeout`) bounds the whole exchange and
/// `configuration.connectTimeout` the connection; `requiresHTTP2` and `allowsCleartext` select
/// the protocols as for `HTTPClient`. `maxConcurrentStreams` is not used.
public enum BlockingExchange {
    /// Sends `request` and waits for the response or the failure.
    /// - Returns: the response (any status) or an `HTTPClientError`: `.invalidRequest` before
    ///   sending (URL scheme, method, header bytes), `.timedOut`, `.couldNotConnect`,
    ///   `.couldNotResolve`, `.tls`, `.connectionLost`, `.responseTooLarge`,
    ///   `.http2NotNegotiated` (only with `requiresHTTP2`), or `.curl(code:)`.
    public static func perform(
        _ request: HTTPClientRequest, configuration: HTTPClientConfiguration
    ) -> Result<HTTPClientResponse, HTTPClientError> {
        do {
            try CurlGlobal.ensureInitialised()
        } catch {
            return .failure(error)
        }
        let transfer: Transfer
        do {
            transfer = try Transfer(id: 0, request: request, completion: { _ in }, configuration: configuration)
        } catch {
            return .failure(error)
        }
        let code = curl_easy_perform(transfer.easy)
        return transfer.result(code: code)
    }
}
