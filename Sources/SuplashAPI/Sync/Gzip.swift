import CZlib
import SuplashHTTP

/// Request-body decoding (spec §7 "Compression"): `Content-Encoding: gzip` bodies are
/// inflated with a cap on the inflated size, checked while inflating.
enum RequestDecoding {
    /// Returns `request` with its body inflated when it is gzip-encoded.
    /// - Throws: 415 `unsupported_content_encoding` for another coding, 400 `malformed_gzip`
    ///   for a corrupt stream, 413 `payload_too_large` past `limit` inflated bytes.
    static func decode(_ request: HTTPRequest, limit: Int) throws(APIError) -> HTTPRequest {
        guard let raw = request.headers.first(name: "Content-Encoding") else { return request }
        let coding = Substring(raw).trimmingASCIISpaces().lowercased()
        if coding == "identity" { return request }
        guard coding == "gzip" else {
            throw APIError(.unsupportedContentEncoding, detail: "Request bodies may be sent with Content-Encoding gzip only.")
        }
        var out = request
        out.body = try inflate(request.body, limit: limit)
        out.head.headers.remove(name: "Content-Encoding")
        return out
    }

    static let tooLarge = APIError(.payloadTooLarge, detail: "The inflated body exceeds this route's body limit.")

    /// Inflates a gzip stream (RFC 1952), refusing output past `limit` bytes.
    static func inflate(_ input: [UInt8], limit: Int) throws(APIError) -> [UInt8] {
        let malformed = APIError.badRequest(.malformedGzip, "The body is not a valid gzip stream.")
        if input.isEmpty { return [] }
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw APIError.internalError
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = input
        var status: Int32 = Z_OK
        var failure: APIError?
        input.withUnsafeMutableBufferPointer { inBuf in
            stream.next_in = inBuf.baseAddress
            stream.avail_in = UInt32(inBuf.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = UInt32(outBuf.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    let produced = outBuf.count - Int(stream.avail_out)
                    if output.count + produced > limit {
                        failure = tooLarge
                    } else {
                        output.append(contentsOf: outBuf[0..<produced])
                    }
                }
                if failure != nil { return }
                if status == Z_STREAM_END { return }
                if status != Z_OK {
                    failure = malformed
                    return
                }
                if stream.avail_in == 0 && stream.avail_out != 0 {
                    failure = malformed  // truncated stream
                    return
                }
            } while true
        }
        if let failure { throw failure }
        guard stream.avail_in == 0 else { throw malformed }  // trailing bytes after the member
        return output
    }
}
