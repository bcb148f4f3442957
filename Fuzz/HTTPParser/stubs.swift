// Stand-ins for engine types that HTTPTypes.swift mentions but the parser never uses, so the
// fuzz target compiles without the event loop, epoll and logging (see Fuzz/run.sh).

/// Named by `HTTPResponder.respond(to:sink:)`; the real one lives in HTTPResponseSink.swift.
public final class HTTPResponseSink: Sendable {}

/// Named by `HTTPResponse.bodyFile`; the real one lives in HTTPFileBody.swift.
public final class HTTPFileBody: Sendable {}
