import CZlib
import SuplashHTTP

/// gzip response bodies (RFC 9110 §8.4.1.3, spec §7 "Compression") with zlib.
enum ResponseCompression {
    /// Bodies at or below this many bytes are sent as they are (1 KiB).
    static let threshold = 1024

    /// True when `Accept-Encoding` accepts gzip (a `q=0` refuses it).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingASCIISpaces().lowercased() }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { continue }
            let refused = parts.dropFirst().contains { param in
                param.hasPrefix("q=") && (Double(param.dropFirst(2)) ?? 1) == 0
            }
            return !refused
        }
        return false
    }

    /// Compresses `response` in place when the client accepts gzip and the body is JSON or
    /// text over the threshold; adds `Content-Encoding`, `Vary` and suffixes a strong ETag
    /// with `-gzip` (preconditions accept both forms). Always adds `Vary: Accept-Encoding`
    /// to compressible types so caches keep the two forms apart.
    static func apply(to response: inout HTTPResponse, acceptEncoding: String?) {
        let type = response.headers.first(name: "Content-Type") ?? ""
        guard
            type.hasPrefix("application/json") || type.hasPrefix("application/problem+json")
                || type.hasPrefix("text/")
        else { return }
        response.headers.add(name: "Vary", value: "Accept-Encoding")
        guard response.body.count > threshold, acceptsGzip(acceptEncoding),
            !response.headers.contains(name: "Content-Encoding"),
            let compressed = gzip(response.body)
        else { return }
        response.body = compressed
        response.headers.add(name: "Content-Encoding", value: "gzip")
        if let etag = response.headers.first(name: "ETag"), etag.hasSuffix("\""), !etag.hasPrefix("W/") {
            response.headers.replaceOrAdd(name: "ETag", value: String(etag.dropLast()) + "-gzip\"")
        }
    }

    /// gzip (RFC 1952) of `input` at zlib's default level, or nil if zlib fails.
    static func gzip(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // windowBits 15 + 16 selects the gzip wrapper.
        guard
            deflateInit2_(
                &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        let status: Int32 = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}
