#if canImport(Glibc)
    import Glibc
#endif

/// A method + path-template router.
///
/// Templates are `/`-separated segments; `{name}` captures one non-empty segment, any
/// other segment is a literal compared byte for byte — so `entries:batch` is its own
/// literal, distinct from `entries`. Literal segments win over parameters at the same
/// position. Paths are matched raw (not percent-decoded); captured parameters are raw too.
/// `HEAD` falls back to the `GET` handler when no `HEAD` route exists.
///
/// ```swift
/// var router = Router<Handler>()
/// router.add("GET", "/v1/users/{uid}", getUser)
/// switch router.match(method: "GET", path: "/v1/users/me") {
/// case .found(let handler, let params, let template): ...   // params["uid"] == "me"
/// case .methodNotAllowed(let allowed): ...                  // 405 with Allow: allowed.joined(", ")
/// case .notFound: ...
/// }
/// ```
public struct Router<Handler: Sendable>: Sendable {
    /// The outcome of `match(method:path:)`.
    public enum Match {
        /// A route matched: its handler, the captured `{name}` values, and the template.
        case found(handler: Handler, parameters: [String: String], template: String)
        /// No template matches the path (404).
        case notFound
        /// Templates match the path but not for this method (405); the methods that would
        /// (sorted, `HEAD` included where `GET` exists).
        case methodNotAllowed(allowed: [String])
    }

    // The trie is not generic (`RouteTrie`): only `handlers` depends on `Handler`. A generic
    // trie was matched through unspecialised code from other modules, paying for runtime
    // generic-metadata look-ups on every request.
    private var trie = RouteTrie()
    private var handlers: [Handler] = []

    /// An empty router.
    public init() {}

    /// Adds `handler` for `method` (exact, case-sensitive) on `template`.
    /// A second route with the same method and template shape replaces the first.
    public mutating func add(_ method: String, _ template: String, _ handler: Handler) {
        if !isKnownUniquelyReferenced(&trie.root) { trie.root = trie.root.copy() }
        handlers.append(handler)
        trie.add(method, template, handlerIndex: handlers.count - 1)
    }

    /// Every registered route as (method, template), sorted by template then method —
    /// the route table that `/openapi.json` must describe (`HEAD` fallbacks are not listed).
    public var routes: [(method: String, template: String)] { trie.routes }

    /// Matches `path` (raw, without the query) for `method`.
    public func match(method: String, path: String) -> Match {
        switch trie.match(method: method, path: path, wantParameters: true) {
        case .found(let index, let parameters, let template):
            return .found(handler: handlers[index], parameters: parameters, template: template)
        case .notFound:
            return .notFound
        case .methodNotAllowed(let allowed):
            return .methodNotAllowed(allowed: allowed)
        }
    }

    /// The handler `match(method:path:)` would find, without building its parameters — a
    /// cheaper look-up for decisions taken before the body is read (body limits).
    public func handler(method: String, path: String) -> Handler? {
        if case .found(let index, _, _) = trie.match(method: method, path: path, wantParameters: false) {
            return handlers[index]
        }
        return nil
    }
}

/// The method + template trie behind `Router`, with handlers by index.
///
/// Matching works on the path's UTF-8 bytes: literal children and a node's methods are short
/// arrays compared byte for byte (a node has a handful of children), segments are byte ranges
/// found while descending, and only captured values become `String`s. Hashing `Substring`
/// keys and splitting the path into an array of segments cost more than the rest of the
/// request's routing together.
private struct RouteTrie: Sendable {
    enum Match {
        case found(handlerIndex: Int, parameters: [String: String], template: String)
        case notFound
        case methodNotAllowed(allowed: [String])
    }

    struct Route: Sendable {
        var handlerIndex: Int
        var template: String
        var parameterNames: [String]
    }

    final class Node: @unchecked Sendable {
        // Sendable: nodes are only mutated while the owning Router value is uniquely
        // referenced (copy-on-write in `Router.add`), i.e. before it is shared across threads.
        var literals: [(segment: [UInt8], node: Node)] = []
        var parameter: Node?
        var routes: [(method: String, route: Route)] = []

        func copy() -> Node {
            let node = Node()
            node.literals = literals.map { ($0.segment, $0.node.copy()) }
            node.parameter = parameter?.copy()
            node.routes = routes
            return node
        }

        /// The literal child named by `bytes`, if any.
        func literal(_ bytes: UnsafeBufferPointer<UInt8>) -> Node? {
            for child in literals where child.segment.count == bytes.count {
                let equal = child.segment.withUnsafeBufferPointer { segment in
                    bytes.isEmpty || memcmp(segment.baseAddress!, bytes.baseAddress!, bytes.count) == 0
                }
                if equal { return child.node }
            }
            return nil
        }

        /// The route registered for `method`.
        func route(_ method: String) -> Route? {
            for entry in routes where entry.method == method { return entry.route }
            return nil
        }
    }

    var root = Node()

    func add(_ method: String, _ template: String, handlerIndex: Int) {
        var node = root
        var names: [String] = []
        for segment in RouteTrie.segments(of: template) {
            if segment.count >= 2 && segment.first == "{" && segment.last == "}" {
                names.append(String(segment.dropFirst().dropLast()))
                if node.parameter == nil { node.parameter = Node() }
                if let next = node.parameter { node = next }
            } else {
                let bytes = Array(segment.utf8)
                if let next = node.literals.first(where: { $0.segment == bytes })?.node {
                    node = next
                } else {
                    let next = Node()
                    node.literals.append((bytes, next))
                    node = next
                }
            }
        }
        let route = Route(handlerIndex: handlerIndex, template: template, parameterNames: names)
        if let index = node.routes.firstIndex(where: { $0.method == method }) {
            node.routes[index].route = route
        } else {
            node.routes.append((method, route))
        }
    }

    var routes: [(method: String, template: String)] {
        var out: [(method: String, template: String)] = []
        var stack = [root]
        while let node = stack.popLast() {
            for (method, route) in node.routes { out.append((method, route.template)) }
            stack.append(contentsOf: node.literals.map(\.node))
            if let parameter = node.parameter { stack.append(parameter) }
        }
        return out.sorted { ($0.template, $0.method) < ($1.template, $1.method) }
    }

    func match(method: String, path: String, wantParameters: Bool) -> Match {
        var path = path
        return path.withUTF8 { bytes in
            // `/a/b` → segments "a", "b"; `/` → none; `/a/` → "a", "" (a trailing slash is
            // significant). `first` is where the first segment starts, nil when there is none.
            var first = 0
            if first < bytes.count && bytes[first] == UInt8(ascii: "/") { first += 1 }
            var values: [Range<Int>] = []
            var anyPathMatch = false
            var allowed = Set<String>()
            if let route = RouteTrie.search(
                root, bytes, from: first < bytes.count ? first : nil, method: method, values: &values,
                anyPathMatch: &anyPathMatch, allowed: &allowed)
            {
                var parameters: [String: String] = [:]
                if wantParameters {
                    parameters.reserveCapacity(values.count)
                    for (name, range) in zip(route.parameterNames, values) {
                        parameters[name] = String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
                    }
                }
                return .found(handlerIndex: route.handlerIndex, parameters: parameters, template: route.template)
            }
            if anyPathMatch {
                return .methodNotAllowed(allowed: allowed.sorted())
            }
            return .notFound
        }
    }

    /// Depth-first: literal before parameter; `values` holds the captures of the path taken.
    /// `start` is the offset of the next segment in `path`, nil when every segment is matched.
    private static func search(
        _ node: Node, _ path: UnsafeBufferPointer<UInt8>, from start: Int?, method: String,
        values: inout [Range<Int>], anyPathMatch: inout Bool,
        allowed: inout Set<String>
    ) -> Route? {
        guard let start else {
            guard !node.routes.isEmpty else { return nil }
            anyPathMatch = true
            if let route = node.route(method) ?? (method == "HEAD" ? node.route("GET") : nil) {
                return route
            }
            for (key, _) in node.routes {
                allowed.insert(key)
                if key == "GET" { allowed.insert("HEAD") }
            }
            return nil
        }
        var end = start
        while end < path.count && path[end] != UInt8(ascii: "/") { end += 1 }
        let rest: Int? = end < path.count ? end + 1 : nil
        if let literal = node.literal(UnsafeBufferPointer(rebasing: path[start..<end])),
            let found = search(
                literal, path, from: rest, method: method, values: &values, anyPathMatch: &anyPathMatch,
                allowed: &allowed)
        {
            return found
        }
        if let parameter = node.parameter, end > start {
            values.append(start..<end)
            if let found = search(
                parameter, path, from: rest, method: method, values: &values, anyPathMatch: &anyPathMatch,
                allowed: &allowed)
            {
                return found
            }
            values.removeLast()
        }
        return nil
    }

    /// A template's segments: `/a/b` → `["a", "b"]`; `/` → `[]`; `/a/` → `["a", ""]`.
    private static func segments(of template: String) -> [Substring] {
        var rest = Substring(template)
        if rest.hasPrefix("/") { rest = rest.dropFirst() }
        if rest.isEmpty { return [] }
        return rest.split(separator: "/", omittingEmptySubsequences: false)
    }
}
