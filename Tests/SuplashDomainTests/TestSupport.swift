import SuplashDomain
import SuplashJSON
import XCTest

/// Parses JSON text with the project's strict RFC 8259 parser.
func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
    do {
        return try JSONParser.parse(text)
    } catch {
        XCTFail("test JSON did not parse: \(error)", file: file, line: line)
        throw error
    }
}

/// The field errors a validation throws, or nil (and a test failure) when it succeeds.
func fieldErrors<T>(
    _ body: () throws(ValidationFailure) -> T,
    file: StaticString = #filePath, line: UInt = #line
) -> [FieldError] {
    do {
        let value = try body()
        XCTFail("expected a ValidationFailure, got \(value)", file: file, line: line)
        return []
    } catch {
        XCTAssertFalse(error.errors.isEmpty, "a ValidationFailure must list at least one error", file: file, line: line)
        return error.errors
    }
}

/// `[pointer: code]` of a list of errors (asserting each pointer appears once).
func codesByPointer(_ errors: [FieldError], file: StaticString = #filePath, line: UInt = #line) -> [String: FieldErrorCode] {
    var out: [String: FieldErrorCode] = [:]
    for e in errors {
        XCTAssertNil(out[e.pointer], "pointer \(e.pointer) reported twice", file: file, line: line)
        out[e.pointer] = e.code
    }
    return out
}

/// Asserts that exactly one error is reported, with the given pointer and code.
func assertSingleError(
    _ errors: [FieldError], _ pointer: String, _ code: FieldErrorCode,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(errors.map(\.pointer), [pointer], file: file, line: line)
    XCTAssertEqual(errors.map(\.code), [code], file: file, line: line)
}
