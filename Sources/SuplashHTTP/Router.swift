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

    private struct Route: Sendable {
        var handler: Handler
        var template: String
        var parameterNames: [String]
    }

    private final class Node: @unchecked Sendable {
        // Sendable: nodes are only mutated while the owning Router value is uniquely
        // referenced (copy-on-write in `add`), i.e. before it is shared across threads.
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

    private var root = Node()

    /// An empty router.
    public init() {}

    /// Adds `handler` for `method` (exact, case-sensitive) on `template`.
    /// A second route with the same method and template shape replaces the first.
    public mutating func add(_ method: String, _ template: String, _ handler: Handler) {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        var node = root
        var names: [String] = []
        for segment in Router.segments(of: template) {
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
        node.routes[method] = Route(handler: handler, template: template, parameterNames: names)
    }

    /// Every registered route as (method, template), sorted by template then method —
    /// the route table that `/openapi.json` must describe (`HEAD` fallbacks are not listed).
    public var routes: [(method: String, template: String)] {
        var out: [(method: String, template: String)] = []
        var stack = [root]
        while let node = stack.popLast() {
            for (method, route) in node.routes { out.append((method, route.template)) }
            stack.append(contentsOf: node.literals.values)
            if let parameter = node.parameter { stack.append(parameter) }
        }
        return out.sorted { ($0.template, $0.method) < ($1.template, $1.method) }
    }

    /// Matches `path` (raw, without the query) for `method`.
    public func match(method: String, path: String) -> Match {
        let segments = Router.segments(of: path)
        var values: [Substring] = []
        var anyPathMatch = false
        var allowed = Set<String>()
        if let found = Router.search(root, segments[...], method: method, values: &values,
                                     anyPathMatch: &anyPathMatch, allowed: &allowed) {
            var parameters: [String: String] = [:]
            for (name, value) in zip(found.route.parameterNames, found.values) {
                parameters[name] = String(value)
            }
            return .found(handler: found.route.handler, parameters: parameters, template: found.route.template)
        }
        if anyPathMatch {
            return .methodNotAllowed(allowed: allowed.sorted())
        }
        return .notFound
    }

    private static func search(_ node: Node, _ segments: ArraySlice<Substring>, method: String,
                               values: inout [Substring], anyPathMatch: inout Bool,
                               allowed: inout Set<String>) -> (route: Route, values: [Substring])? {
        guard let segment = segments.first else {
            guard !node.routes.isEmpty else { return nil }
            anyPathMatch = true
            if let route = node.routes[method] ?? (method == "HEAD" ? node.routes["GET"] : nil) {
                return (route, values)
            }
            for key in node.routes.keys {
                allowed.insert(key)
                if key == "GET" { allowed.insert("HEAD") }
            }
            return nil
        }
        let rest = segments.dropFirst()
        if let literal = node.literals[segment],
           let found = search(literal, rest, method: method, values: &values, anyPathMatch: &anyPathMatch, allowed: &allowed) {
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
    private static func segments(of path: String) -> [Substring] {
        var trimmed = Substring(path)
        if trimmed.first == "/" { trimmed = trimmed.dropFirst() }
        if trimmed.isEmpty { return [] }
        return trimmed.split(separator: "/", omittingEmptySubsequences: false)
    }
}
