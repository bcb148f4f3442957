import Foundation

/// Writes to standard output and error with `write(2)`, giving up quietly on an error. The
/// process ignores SIGPIPE (`main`), so a stream nobody reads any more answers `EPIPE`; Foundation's
/// `FileHandle.write(_:)` would trap on that error, ending a command that did its work.
enum StandardStreams {
    /// Descriptor 1.
    static func output(_ text: String) { write(text, to: 1) }
    /// Descriptor 2.
    static func error(_ text: String) { write(text, to: 2) }
    /// Raw bytes to descriptor 1.
    static func output(bytes: [UInt8]) { write(bytes, to: 1) }

    private static func write(_ text: String, to descriptor: Int32) { write(Array(text.utf8), to: descriptor) }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(descriptor, base + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
