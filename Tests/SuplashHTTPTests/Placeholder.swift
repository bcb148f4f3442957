import XCTest
final class PlaceholderSuplashHTTPTests: XCTestCase { func testPlaceholder() {} }
