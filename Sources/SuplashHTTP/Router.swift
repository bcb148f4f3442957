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
        var literals: [Substring: Node] = [:]
        var parameter: Node?
        var routes: [String: Route] = [:]

        func copy() -> Node {
            let node = Node()
            node.literals = literals.mapValues { $0.copy() }
            node.parameter = parameter?.copy()
            node.routes = routes
            return node
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
                if let next = node.literals[segment] {
                    node = next
                } else {
                    let next = Node()
                    node.literals[segment] = next
                    node = next
                }
            }
        }
        node.routes[method] = Route(handlerIndex: handlerIndex, template: template, parameterNames: names)
    }

    var routes: [(method: String, template: String)] {
        var out: [(method: String, template: String)] = []
        var stack = [root]
        while let node = stack.popLast() {
            for (method, route) in node.routes { out.append((method, route.template)) }
            stack.append(contentsOf: node.literals.values)
            if let parameter = node.parameter { stack.append(parameter) }
        }
        return out.sorted { ($0.template, $0.method) < ($1.template, $1.method) }
    }

    func match(method: String, path: String, wantParameters: Bool) -> Match {
        let segments = RouteTrie.segments(of: path)
        var values: [Substring] = []
        var anyPathMatch = false
        var allowed = Set<String>()
        if let route = RouteTrie.search(
            root, segments[...], method: method, values: &values,
            anyPathMatch: &anyPathMatch, allowed: &allowed)
        {
            var parameters: [String: String] = [:]
            if wantParameters {
                for (name, value) in zip(route.parameterNames, values) {
                    parameters[name] = String(value)
                }
            }
            return .found(handlerIndex: route.handlerIndex, parameters: parameters, template: route.template)
        }
        if anyPathMatch {
            return .methodNotAllowed(allowed: allowed.sorted())
        }
        return .notFound
    }

    /// Depth-first: literal before parameter; `values` holds the captures of the path taken.
    private static func search(
        _ node: Node, _ segments: ArraySlice<Substring>, method: String,
        values: inout [Substring], anyPathMatch: inout Bool,
        allowed: inout Set<String>
    ) -> Route? {
        guard let segment = segments.first else {
            guard !node.routes.isEmpty else { return nil }
            anyPathMatch = true
            if let route = node.routes[method] ?? (method == "HEAD" ? node.routes["GET"] : nil) {
                return route
            }
            for key in node.routes.keys {
                allowed.insert(key)
                if key == "GET" { allowed.insert("HEAD") }
            }
            return nil
        }
        let rest = segments.dropFirst()
        if let literal = node.literals[segment],
            let found = search(literal, rest, method: method, values: &values, anyPathMatch: &anyPathMatch, allowed: &allowed)
        {
            return found
        }
        if let parameter = node.parameter, !segment.isEmpty {
            values.append(segment)
            if let found = search(parameter, rest, method: method, values: &values, anyPathMatch: &anyPathMatch, allowed: &allowed) {
                return found
            }
            values.removeLast()
        }
        return nil
    }

    /// `/a/b` → `["a", "b"]`; `/` → `[]`; `/a/` → `["a", ""]` (a trailing slash is significant).
    /// Splits on the UTF-8 bytes (`/` is ASCII and never part of a multi-byte scalar), not on
    /// `Character`s: grapheme breaking made this the costliest step of routing.
    private static func segments(of path: String) -> [Substring] {
        let utf8 = path.utf8
        var start = utf8.startIndex
        if start != utf8.endIndex && utf8[start] == UInt8(ascii: "/") { start = utf8.index(after: start) }
        if start == utf8.endIndex { return [] }
        var out: [Substring] = []
        out.reserveCapacity(8)
        var segmentStart = start
        var i = start
        while i != utf8.endIndex {
            if utf8[i] == UInt8(ascii: "/") {
                out.append(Substring(path.utf8[segmentStart..<i]))
                segmentStart = utf8.index(after: i)
            }
            i = utf8.index(after: i)
        }
        out.append(Substring(path.utf8[segmentStart..<utf8.endIndex]))
        return out
    }
}
