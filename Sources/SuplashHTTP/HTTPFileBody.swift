#if canImport(Glibc)
    import Glibc
#endif

/// A response body held in an (already unlinked) temporary file instead of memory.
///
/// The engine sends it with `sendfile(2)` as the client reads, so a large answer costs no
/// memory per slow client, and whatever produced it (a read snapshot) is released as soon
/// as the file is written. The file is closed when the last reference goes away.
///
/// ```swift
/// let file = try HTTPFileBody.temporary(in: "/tmp") { writer in
///     try writer.write(Array("{\"big\":true}".utf8))
/// }
/// var response = HTTPResponse(status: 200)
/// response.bodyFile = file
/// ```
public final class HTTPFileBody: Sendable {
    /// The open descriptor, read with `sendfile` from offset 0.
    let fd: Int32
    /// The body's length in bytes (its `Content-Length`).
    public let count: Int

    private init(fd: Int32, count: Int) {
        self.fd = fd
        self.count = count
    }

    deinit { Glibc.close(fd) }

    /// Appends bytes to the temporary file being produced.
    public struct Writer: ~Copyable {
        fileprivate let fd: Int32
        fileprivate var written = 0

        /// Writes all of `bytes`.
        /// - Throws: `SyscallError` (`write`), e.g. `ENOSPC`.
        public mutating func write(_ bytes: [UInt8]) throws(SyscallError) {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw in
                    Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                }
                if n < 0 {
                    let e = Glibc.errno
                    if e == EINTR { continue }
                    throw SyscallError(call: "write", errno: e)
                }
                offset += n
            }
            written += bytes.count
        }
    }

    /// Creates an anonymous file in `directory` (created with `mkstemp`, unlinked at once,
    /// mode 0600), lets `produce` write the body, and returns it ready to send.
    /// - Throws: `SyscallError` (`mkstemp`, `write`) or what `produce` throws.
    public static func temporary(
        in directory: String,
        _ produce: (inout Writer) throws -> Void
    ) throws -> HTTPFileBody {
        var template = Array((directory + "/suplash-body-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SyscallError(call: "mkstemp", errno: Glibc.errno) }
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        var writer = Writer(fd: fd)
        do {
            try produce(&writer)
        } catch {
            Glibc.close(fd)
            throw error
        }
        return HTTPFileBody(fd: fd, count: writer.written)
    }
}
