/// An ordered list of HTTP header fields (RFC 9110 §5).
///
/// Names keep the case they were received or added with; every lookup compares names
/// ASCII case-insensitively. Duplicate names are kept in order (`values(name:)` returns
/// them all). Values are stored without leading/trailing whitespace as parsed.
public struct HTTPHeaders: Sequence, Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// One field: `(name, value)`.
    public typealias Element = (name: String, value: String)

    var storage: [(name: String, value: String)]

    /// An empty header list.
    public init() { storage = [] }

    /// Headers from `(name, value)` pairs, in order.
    public init(_ fields: [(String, String)]) {
        storage = fields.map { (name: $0.0, value: $0.1) }
    }

    /// Headers from a literal, in order: `["Content-Type": "application/json"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        storage = elements.map { (name: $0.0, value: $0.1) }
    }

    /// Number of fields (duplicates counted).
    public var count: Int { storage.count }

    /// True when there are no fields.
    public var isEmpty: Bool { storage.isEmpty }

    /// Appends a field (keeps existing ones of the same name).
    public mutating func add(name: String, value: String) {
        storage.append((name: name, value: value))
    }

    /// Removes every field named `name` and appends `name: value`.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        storage.append((name: name, value: value))
    }

    /// The first value of `name`, or nil.
    public func first(name: String) -> String? {
        for field in storage where asciiCaseInsensitiveEquals(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(name: String) -> [String] {
        storage.compactMap { asciiCaseInsensitiveEquals($0.name, name) ? $0.value : nil }
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        storage.removeAll { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// True when at least one field is named `name`.
    public func contains(name: String) -> Bool {
        storage.contains { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// The value of `name` as a comma-separated list (RFC 9110 §5.6.1), all fields
    /// combined, elements trimmed of whitespace, empty elements dropped.
    public func listValues(name: String) -> [Substring] {
        var out: [Substring] = []
        for field in storage where asciiCaseInsensitiveEquals(field.name, name) {
            for element in field.value.split(separator: ",") {
                let trimmed = element.trimmingOWS()
                if !trimmed.isEmpty { out.append(trimmed) }
            }
        }
        return out
    }

    /// Iterates fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        storage.makeIterator()
    }

    /// Field-by-field equality (names compared exactly, order significant).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.storage.count == rhs.storage.count else { return false }
        for (a, b) in zip(lhs.storage, rhs.storage) where a.name != b.name || a.value != b.value {
            return false
        }
        return true
    }
}

/// ASCII case-insensitive comparison without allocating.

func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    var a = a
    var b = b
    return a.withUTF8 { pa in
        b.withUTF8 { pb in
            guard pa.count == pb.count else { return false }
            for i in 0..<pa.count {
                let x = pa[i]
                let y = pb[i]
                if x != y && (x | 0x20) != (y | 0x20) { return false }
                if x != y && !((x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A) { return false }
            }
            return true
        }
    }
}

extension Substring {
    /// Drops leading and trailing SP / HTAB.
    func trimmingOWS() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
